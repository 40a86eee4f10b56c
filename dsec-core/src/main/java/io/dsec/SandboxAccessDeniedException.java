package io.dsec;

/** EPERM, EACCES or EROFS: the path may not be changed (a read-only layer such as the toolkit, or permissions). */
public class SandboxAccessDeniedException extends SandboxFileException {
    private static final long serialVersionUID = 1L;

    public SandboxAccessDeniedException(String operation, String path, int errno, String reason) {
        super(operation, path, errno, reason);
    }
}
