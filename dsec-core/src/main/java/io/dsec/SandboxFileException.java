package io.dsec;

/**
 * A file operation inside a sandbox failed with an errno. Common errnos have their own subclass
 * ({@link NoSuchSandboxFileException}, {@link SandboxFileExistsException}, {@link SandboxAccessDeniedException});
 * {@link #of} picks the right one.
 */
public class SandboxFileException extends DsecException {
    private static final long serialVersionUID = 1L;
    public static final int EPERM = 1, ENOENT = 2, EACCES = 13, EEXIST = 17, ENOTDIR = 20, EISDIR = 21, EROFS = 30, ENOTEMPTY = 39;

    private final String path;
    private final int errno;

    public SandboxFileException(String operation, String path, int errno, String reason) {
        super(operation + " " + path + " failed: " + reason + " (errno " + errno + ")");
        this.path = path;
        this.errno = errno;
    }

    /** The exception for this errno: a specific subclass where there is one. */
    public static SandboxFileException of(String operation, String path, int errno, String reason) {
        switch (errno) {
            case ENOENT: return new NoSuchSandboxFileException(operation, path, reason);
            case EEXIST: return new SandboxFileExistsException(operation, path, reason);
            case EPERM: case EACCES: case EROFS: return new SandboxAccessDeniedException(operation, path, errno, reason);
            default: return new SandboxFileException(operation, path, errno, reason);
        }
    }

    /** The path inside the sandbox. */
    public String path() {
        return path;
    }

    /** The errno the agent reported. */
    public int errno() {
        return errno;
    }
}
