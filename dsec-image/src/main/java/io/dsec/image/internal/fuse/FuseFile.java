package io.dsec.image.internal.fuse;

import java.nio.ByteBuffer;

/**
 * One read-only file served by the FUSE server: an EROFS layer image whose bytes may be fetched on demand.
 * Reads come from several FUSE worker threads at once.
 */
public interface FuseFile {
    long size();

    /**
     * Fills {@code into} (position to limit) with the bytes at {@code offset}; fewer only at the end of the file.
     *
     * @throws FuseErrnoException with the errno to answer (EIO for data that cannot be fetched or verified)
     */
    void read(long offset, ByteBuffer into) throws FuseErrnoException;
}
