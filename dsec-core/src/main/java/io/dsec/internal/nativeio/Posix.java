package io.dsec.internal.nativeio;

import com.sun.jna.LastErrorException;
import com.sun.jna.NativeLong;
import java.nio.file.Path;

/**
 * The narrow native interface of dsec-core: mounts, rlimits, signals. Every errno becomes an {@link ErrnoException}
 * naming the call and its arguments.
 */
public final class Posix {
    public static final long MS_RDONLY = 1, MS_NOSUID = 2, MS_NODEV = 4;
    public static final int MNT_DETACH = 2;
    public static final int RLIMIT_NPROC = 6, RLIMIT_NOFILE = 7;
    public static final int EINVAL = 22, ENOENT = 2, EBUSY = 16, ESRCH = 3, ENODEV = 19, EPERM = 1;

    private Posix() {
    }

    public static void mount(String source, Path target, String fsType, long flags, String data) {
        try {
            LibC.mount(source, target.toString(), fsType, new NativeLong(flags), data);
        } catch (LastErrorException e) {
            throw new ErrnoException("mount -t " + fsType + " " + source + " " + target + (data == null ? "" : " -o " + data),
                e.getErrorCode(), LibC.strerror(e.getErrorCode()));
        }
    }

    public static void unmount(Path target, int flags) {
        try {
            LibC.umount2(target.toString(), flags);
        } catch (LastErrorException e) {
            throw new ErrnoException("umount " + target, e.getErrorCode(), LibC.strerror(e.getErrorCode()));
        }
    }

    public static boolean isRoot() {
        return LibC.geteuid() == 0;
    }

    /** The hard limit of an rlimit: no sandbox can be given more without CAP_SYS_RESOURCE. */
    public static long hardLimit(int resource) {
        LibC.RLimit limit = new LibC.RLimit();
        try {
            LibC.getrlimit(resource, limit);
        } catch (LastErrorException e) {
            throw new ErrnoException("getrlimit " + resource, e.getErrorCode(), LibC.strerror(e.getErrorCode()));
        }
        return limit.max;
    }

    /** Sends a signal; false when the process does not exist. */
    public static boolean kill(int pid, int signal) {
        try {
            LibC.kill(pid, signal);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == ESRCH) {
                return false;
            }
            throw new ErrnoException("kill " + pid + " " + signal, e.getErrorCode(), LibC.strerror(e.getErrorCode()));
        }
    }
}
