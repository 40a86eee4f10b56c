package io.dsec;

/** A sandbox could not be created. Everything made for it before the failure has been rolled back. */
public class SandboxLaunchException extends DsecException {
    private static final long serialVersionUID = 1L;

    public SandboxLaunchException(String message) {
        super(message);
    }

    public SandboxLaunchException(String message, Throwable cause) {
        super(message, cause);
    }
}
