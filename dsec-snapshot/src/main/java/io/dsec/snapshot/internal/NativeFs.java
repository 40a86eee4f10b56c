package io.dsec.snapshot.internal;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The libc calls a faithful tree copy needs and Java lacks: xattrs of any namespace, mknod, lchown, utimensat, holes. */
final class NativeFs {
    static {
        Native.register(NativeFs.class, "c");
    }

    static final int S_IFMT = 0170000, S_IFDIR = 0040000, S_IFREG = 0100000, S_IFLNK = 0120000, S_IFCHR = 0020000,
        S_IFBLK = 0060000, S_IFIFO = 0010000, S_IFSOCK = 0140000;
    private static final int AT_FDCWD = -100, AT_SYMLINK_NOFOLLOW = 0x100;
    private static final int O_RDONLY = 0, O_WRONLY = 1, O_CREAT = 0100, O_EXCL = 0200, O_NOFOLLOW = 0400000, O_CLOEXEC = 02000000;
    private static final int SEEK_DATA = 3, SEEK_HOLE = 4;
    private static final int ENODATA = 61, ENXIO = 6, EXDEV = 18, EINVAL = 22, ENOSYS = 38, EOPNOTSUPP = 95, ENOTSUP = 95;

    private NativeFs() {
    }

    private static native long llistxattr(String path, byte[] list, long size) throws LastErrorException;

    private static native long lgetxattr(String path, String name, byte[] value, long size) throws LastErrorException;

    private static native int lsetxattr(String path, String name, byte[] value, long size, int flags) throws LastErrorException;

    private static native int lremovexattr(String path, String name) throws LastErrorException;

    private static native int mknod(String path, int mode, long dev) throws LastErrorException;

    private static native int lchown(String path, int uid, int gid) throws LastErrorException;

    private static native int chmod(String path, int mode) throws LastErrorException;

    private static native int utimensat(int dirfd, String path, long[] times, int flags) throws LastErrorException;

    private static native int open(String path, int flags, int mode) throws LastErrorException;

    private static native int close(int fd);

    private static native long lseek(int fd, long offset, int whence) throws LastErrorException;

    private static native long copy_file_range(int in, LongByReference inOff, int out, LongByReference outOff, long len, int flags)
        throws LastErrorException;

    private static native long pread(int fd, Pointer buf, long count, long offset) throws LastErrorException;

    private static native long pwrite(int fd, Pointer buf, long count, long offset) throws LastErrorException;

    private static native int ftruncate(int fd, long length) throws LastErrorException;

    static IOException io(String what, String path, LastErrorException e) {
        return new IOException(what + " " + path + ": errno " + e.getErrorCode() + " (" + e.getMessage() + ")", e);
    }

    /** The xattr names of {@code path} (not following a symlink). */
    static List<String> listXattrs(String path) throws IOException {
        try {
            long size = llistxattr(path, null, 0);
            if (size <= 0) {
                return List.of();
            }
            byte[] buf = new byte[(int) size + 256];
            long n = llistxattr(path, buf, buf.length);
            List<String> names = new ArrayList<>();
            int start = 0;
            for (int i = 0; i < n; i++) {
                if (buf[i] == 0) {
                    if (i > start) {
                        names.add(new String(buf, start, i - start, StandardCharsets.UTF_8));
                    }
                    start = i + 1;
                }
            }
            return names;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == EOPNOTSUPP) {
                return List.of();
            }
            throw io("llistxattr", path, e);
        }
    }

    /** The value of an xattr, or null when it is absent. */
    static byte[] getXattr(String path, String name) throws IOException {
        try {
            long size = lgetxattr(path, name, null, 0);
            byte[] buf = new byte[(int) size];
            long n = size == 0 ? 0 : lgetxattr(path, name, buf, buf.length);
            return n == buf.length ? buf : java.util.Arrays.copyOf(buf, (int) n);
        } catch (LastErrorException e) {
            if (e.getErrorCode() == ENODATA || e.getErrorCode() == EOPNOTSUPP) {
                return null;
            }
            throw io("lgetxattr " + name + " of", path, e);
        }
    }

    static void setXattr(String path, String name, byte[] value) throws IOException {
        try {
            lsetxattr(path, name, value, value.length, 0);
        } catch (LastErrorException e) {
            throw io("lsetxattr " + name + " on", path, e);
        }
    }

    static void removeXattr(String path, String name) throws IOException {
        try {
            lremovexattr(path, name);
        } catch (LastErrorException e) {
            if (e.getErrorCode() != ENODATA) {
                throw io("lremovexattr " + name + " on", path, e);
            }
        }
    }

    static void makeNode(String path, int mode, long rdev) throws IOException {
        try {
            mknod(path, mode, rdev);
        } catch (LastErrorException e) {
            throw io("mknod", path, e);
        }
    }

    static void changeOwner(String path, int uid, int gid) throws IOException {
        try {
            lchown(path, uid, gid);
        } catch (LastErrorException e) {
            throw io("lchown", path, e);
        }
    }

    static void changeMode(String path, int mode) throws IOException {
        try {
            chmod(path, mode);
        } catch (LastErrorException e) {
            throw io("chmod", path, e);
        }
    }

    /** Sets atime and mtime (nanoseconds since the epoch) without following a symlink. */
    static void setTimes(String path, long atimeNs, long mtimeNs) throws IOException {
        long[] ts = {Math.floorDiv(atimeNs, 1_000_000_000L), Math.floorMod(atimeNs, 1_000_000_000L),
            Math.floorDiv(mtimeNs, 1_000_000_000L), Math.floorMod(mtimeNs, 1_000_000_000L)};
        try {
            utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
        } catch (LastErrorException e) {
            throw io("utimensat", path, e);
        }
    }

    /**
     * Copies a regular file's bytes into a new file {@code to} (mode 0600), keeping holes: only the data extents
     * (SEEK_DATA/SEEK_HOLE) are copied, with copy_file_range where the filesystems allow it.
     *
     * @return the bytes copied
     */
    static long copySparse(String from, String to, long size) throws IOException {
        int in;
        try {
            in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
        } catch (LastErrorException e) {
            throw io("open", from, e);
        }
        try {
            int out;
            try {
                out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            } catch (LastErrorException e) {
                throw io("create", to, e);
            }
            try {
                long copied = 0;
                long pos = 0;
                boolean useCfr = true;
                Memory buffer = null;
                while (pos < size) {
                    long data;
                    long hole;
                    try {
                        data = lseek(in, pos, SEEK_DATA);
                        hole = lseek(in, data, SEEK_HOLE);
                    } catch (LastErrorException e) {
                        if (e.getErrorCode() == ENXIO) {
                            break; // only a hole is left
                        }
                        if (e.getErrorCode() != EINVAL && e.getErrorCode() != EOPNOTSUPP) {
                            throw io("lseek", from, e);
                        }
                        data = pos; // no hole support: all data
                        hole = size;
                    }
                    hole = Math.min(hole, size);
                    long off = data;
                    while (off < hole) {
                        long n = 0;
                        if (useCfr) {
                            try {
                                LongByReference inOff = new LongByReference(off);
                                LongByReference outOff = new LongByReference(off);
                                n = copy_file_range(in, inOff, out, outOff, hole - off, 0);
                            } catch (LastErrorException e) {
                                int err = e.getErrorCode();
                                if (err != EXDEV && err != EINVAL && err != ENOSYS && err != EOPNOTSUPP) {
                                    throw io("copy_file_range from", from, e);
                                }
                                useCfr = false;
                                continue;
                            }
                        } else {
                            if (buffer == null) {
                                buffer = new Memory(1 << 20);
                            }
                            long want = Math.min(buffer.size(), hole - off);
                            try {
                                n = pread(in, buffer, want, off);
                                long w = 0;
                                while (w < n) {
                                    w += pwrite(out, buffer.share(w), n - w, off + w);
                                }
                            } catch (LastErrorException e) {
                                throw io("copy from", from, e);
                            }
                        }
                        if (n <= 0) {
                            break; // the file shrank meanwhile
                        }
                        off += n;
                        copied += n;
                    }
                    pos = Math.max(hole, off);
                }
                try {
                    ftruncate(out, size);
                } catch (LastErrorException e) {
                    throw io("ftruncate", to, e);
                }
                return copied;
            } finally {
                close(out);
            }
        } finally {
            close(in);
        }
    }
}
