package io.dsec.image.internal.fuse;

/** A read failed; the FUSE server answers it with this errno. */
public final class FuseErrnoException extends Exception {
    private static final long serialVersionUID = 1L;
    public static final int EIO = 5;
    public static final int ENOENT = 2;
    public static final int ETIMEDOUT = 110;

    private final int errno;

    public FuseErrnoException(int errno, String message, Throwable cause) {
        super(message, cause);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
