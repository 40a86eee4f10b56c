package io.dsec.internal.nativeio;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Structure;

/** The few libc calls dsec-core makes directly. Only {@link Posix} touches this. */
final class LibC {
    static {
        Native.register(LibC.class, "c");
    }

    private LibC() {
    }

    static native int mount(String source, String target, String fstype, NativeLong flags, String data) throws LastErrorException;

    static native int umount2(String target, int flags) throws LastErrorException;

    static native int geteuid();

    static native int getrlimit(int resource, RLimit limit) throws LastErrorException;

    static native int kill(int pid, int signal) throws LastErrorException;

    static native String strerror(int errno);

    @Structure.FieldOrder({"cur", "max"})
    public static final class RLimit extends Structure {
        public long cur;
        public long max;
    }
}
