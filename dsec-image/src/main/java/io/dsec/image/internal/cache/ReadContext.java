package io.dsec.image.internal.cache;

import java.util.OptionalInt;

/**
 * Who a read is for, when the FUSE server knows (the pid in the FUSE request header): set around a
 * {@link OnDemandLayerReader#read} on the calling thread. Today it only appears in log lines of failed reads; it is the
 * hook for attributing reads to sandboxes later.
 */
public final class ReadContext {
    private static final ThreadLocal<Integer> PID = new ThreadLocal<>();

    private ReadContext() {
    }

    public static void setRequestingPid(int pid) {
        PID.set(pid);
    }

    public static void clear() {
        PID.remove();
    }

    public static OptionalInt requestingPid() {
        Integer pid = PID.get();
        return pid == null ? OptionalInt.empty() : OptionalInt.of(pid);
    }
}
