package io.dsec.image.internal.fuse;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import io.dsec.internal.nativeio.ErrnoException;
import java.nio.file.Path;

/**
 * The narrow native interface of the FUSE server: /dev/fuse I/O, mount(2), pidfds. Direct-mapped libc calls; every
 * failure other than the expected errnos of the device loop becomes an {@link ErrnoException} naming the call.
 */
final class FuseNative {
    static final int O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2, O_ACCMODE = 3, O_TRUNC = 01000, O_CLOEXEC = 02000000;
    static final long MS_RDONLY = 1, MS_NOSUID = 2, MS_NODEV = 4;
    static final int MNT_DETACH = 2;
    static final int EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EIO = 5, EAGAIN = 11, EACCES = 13, EBUSY = 16,
        ENODEV = 19, ENOTDIR = 20, EISDIR = 21, EINVAL = 22, EROFS = 30, ENOSYS = 38, ENODATA = 61,
        ECONNABORTED = 103, ENOTCONN = 107;
    static final int SIGKILL = 9, SIGTERM = 15;
    static final short POLLIN = 1;
    private static final long SYS_PIDFD_SEND_SIGNAL = 424, SYS_PIDFD_OPEN = 434, SYS_PIDFD_GETFD = 438;

    static {
        Native.register(FuseNative.class, NativeLibrary.getInstance("c"));
    }

    private FuseNative() {
    }

    private static native int open(String path, int flags) throws LastErrorException;

    private static native int close(int fd) throws LastErrorException;

    private static native long read(int fd, Pointer buf, long count) throws LastErrorException;

    private static native long write(int fd, Pointer buf, long count) throws LastErrorException;

    private static native int mount(String source, String target, String fsType, long flags, String data) throws LastErrorException;

    private static native int umount2(String target, int flags) throws LastErrorException;

    private static native int poll(Pointer fds, long nfds, int timeoutMillis) throws LastErrorException;

    private static native long syscall(long number, long a1, long a2, long a3, long a4) throws LastErrorException;

    static native int geteuid();

    static native int getpid();

    private static native String strerror(int errno);

    static String describe(int errno) {
        return strerror(errno);
    }

    static ErrnoException error(String call, LastErrorException e) {
        return new ErrnoException(call, e.getErrorCode(), strerror(e.getErrorCode()));
    }

    static int open(Path path, int flags) {
        try {
            return open(path.toString(), flags);
        } catch (LastErrorException e) {
            throw error("open " + path, e);
        }
    }

    static void closeQuietly(int fd) {
        if (fd < 0) {
            return;
        }
        try {
            close(fd);
        } catch (LastErrorException e) {
            // nothing useful to do: the fd is gone either way
        }
    }

    /** read(2) into {@code buf}; the errno is thrown as a {@link LastErrorException} for the device loop to sort out. */
    static long readRaw(int fd, Pointer buf, long count) throws LastErrorException {
        return read(fd, buf, count);
    }

    /** write(2) of {@code count} bytes; the errno is thrown as a {@link LastErrorException}. */
    static long writeRaw(int fd, Pointer buf, long count) throws LastErrorException {
        return write(fd, buf, count);
    }

    static void mount(String source, Path target, String fsType, long flags, String data) {
        try {
            mount(source, target.toString(), fsType, flags, data);
        } catch (LastErrorException e) {
            throw error("mount -t " + fsType + " " + source + " " + target + (data == null ? "" : " -o " + data), e);
        }
    }

    /** umount2; returns 0 or the errno. */
    static int unmount(Path target, int flags) {
        try {
            umount2(target.toString(), flags);
            return 0;
        } catch (LastErrorException e) {
            return e.getErrorCode();
        }
    }

    static int pidfdOpen(long pid) {
        try {
            return (int) syscall(SYS_PIDFD_OPEN, pid, 0, 0, 0);
        } catch (LastErrorException e) {
            throw error("pidfd_open " + pid, e);
        }
    }

    /** A copy of {@code targetFd} of the process behind {@code pidfd}, close-on-exec. */
    static int pidfdGetfd(int pidfd, int targetFd, long pid) {
        try {
            return (int) syscall(SYS_PIDFD_GETFD, pidfd, targetFd, 0, 0);
        } catch (LastErrorException e) {
            throw error("pidfd_getfd pid " + pid + " fd " + targetFd, e);
        }
    }

    /** Sends a signal through a pidfd; false when the process has already exited. */
    static boolean pidfdSignal(int pidfd, int signal) {
        try {
            syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, signal, 0, 0);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == ESRCH) {
                return false;
            }
            throw error("pidfd_send_signal " + signal, e);
        }
    }

    /** Waits up to {@code timeoutMillis} for {@code fd} to become readable (a pidfd: the process exited). */
    static boolean pollIn(int fd, int timeoutMillis) {
        try (Memory pfd = new Memory(8)) {
            pfd.setInt(0, fd);
            pfd.setShort(4, POLLIN);
            pfd.setShort(6, (short) 0);
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
            while (true) {
                int left = (int) Math.max(0, (deadline - System.nanoTime()) / 1_000_000L);
                try {
                    return poll(pfd, 1, left) > 0 && (pfd.getShort(6) & POLLIN) != 0;
                } catch (LastErrorException e) {
                    if (e.getErrorCode() != EINTR || left == 0) {
                        throw error("poll " + fd, e);
                    }
                }
            }
        }
    }
}
