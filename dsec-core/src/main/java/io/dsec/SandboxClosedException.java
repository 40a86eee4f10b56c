package io.dsec;

/** A call was made on a sandbox (or host) that is already closed. */
public class SandboxClosedException extends DsecException {
    private static final long serialVersionUID = 1L;

    public SandboxClosedException(String message) {
        super(message);
    }
}
