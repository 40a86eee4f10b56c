package io.dsec;

/** EEXIST: the path already exists in the sandbox. */
public class SandboxFileExistsException extends SandboxFileException {
    private static final long serialVersionUID = 1L;

    public SandboxFileExistsException(String operation, String path, String reason) {
        super(operation, path, EEXIST, reason);
    }
}
