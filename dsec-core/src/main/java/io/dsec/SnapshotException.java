package io.dsec;

/** A snapshot could not be taken, stored, found, branched or deleted. Nothing half-written is visible after it. */
public class SnapshotException extends DsecException {
    private static final long serialVersionUID = 1L;

    public SnapshotException(String message) {
        super(message);
    }

    public SnapshotException(String message, Throwable cause) {
        super(message, cause);
    }
}
