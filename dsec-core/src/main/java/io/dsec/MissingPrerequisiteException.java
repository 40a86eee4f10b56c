package io.dsec;

/** The host lacks something dsec needs: root, a tool, a kernel feature. The message says which package or setting fixes it. */
public class MissingPrerequisiteException extends DsecException {
    private static final long serialVersionUID = 1L;

    public MissingPrerequisiteException(String message) {
        super(message);
    }

    public MissingPrerequisiteException(String message, Throwable cause) {
        super(message, cause);
    }
}
