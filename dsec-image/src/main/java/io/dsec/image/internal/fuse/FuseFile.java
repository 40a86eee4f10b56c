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

    /**
     * {@link #read(long, ByteBuffer)} on behalf of the thread {@code pid} (from the FUSE request header, in the pid
     * namespace of the mount; 0 when unknown), for files that account reads to their requesters. The default ignores it.
     */
    default void read(long offset, ByteBuffer into, int pid) throws FuseErrnoException {
        read(offset, into);
    }
}
