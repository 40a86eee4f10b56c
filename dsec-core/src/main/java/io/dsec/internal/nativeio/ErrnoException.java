package io.dsec.internal.nativeio;

import io.dsec.DsecException;

/** A system call failed; carries the errno so callers can tell EBUSY from ENOENT. */
public final class ErrnoException extends DsecException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public ErrnoException(String call, int errno, String reason) {
        super(call + ": " + reason + " (errno " + errno + ")");
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
