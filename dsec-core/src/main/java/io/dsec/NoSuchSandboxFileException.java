package io.dsec;

/** ENOENT: the path does not exist in the sandbox. */
public class NoSuchSandboxFileException extends SandboxFileException {
    private static final long serialVersionUID = 1L;

    public NoSuchSandboxFileException(String operation, String path, String reason) {
        super(operation, path, ENOENT, reason);
    }
}
