package io.dsec.internal.admission;

import java.nio.file.Path;
import java.util.List;

/** Where admission reads the host's capacity and real use; the kernel in production, numbers in unit tests. */
public interface UsageSource {

    /** What the host has. Read once, when the host opens. */
    Capacity capacity();

    /** Host-wide real use now. */
    HostUse host();

    /** A sandbox's real use now, read from its cgroup directories (one per hierarchy); null if they are gone. */
    SandboxUse sandbox(List<Path> cgroupDirs);

    /**
     * @param memoryBytes RAM (MemTotal)
     * @param cpus        processors available
     * @param pids        processes the kernel can have (pid_max)
     * @param diskBytes   size of the state directory's file system
     */
    record Capacity(long memoryBytes, double cpus, long pids, long diskBytes) {
    }

    /**
     * @param memoryUsedBytes RAM in use on the whole host (MemTotal - MemAvailable)
     * @param diskFreeBytes   bytes free to us in the state directory's file system
     */
    record HostUse(long memoryUsedBytes, long diskFreeBytes) {
    }

    /**
     * @param memoryBytes memory in use, without the reclaimable file cache; negative if unknown
     * @param cpuNanos    CPU time used since the sandbox started; negative if unknown
     */
    record SandboxUse(long memoryBytes, long cpuNanos) {
    }
}
