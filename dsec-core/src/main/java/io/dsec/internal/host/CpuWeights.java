package io.dsec.internal.host;

import io.dsec.CpuClass;
import io.dsec.DsecException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What each CPU class means to the kernel's scheduler. The weights were measured on a 2-core host: with both cores
 * busy, equal weights cost a latency-sensitive loop 68% at p50, while 10240 against 2 kept it at its alone figure.
 */
public final class CpuWeights {
    private CpuWeights() {
    }

    /** cgroup v1 {@code cpu.shares}, also what the OCI config's {@code linux.resources.cpu.shares} takes. */
    public static long shares(CpuClass cls) {
        return switch (cls) {
            case LATENCY_SENSITIVE -> 10240;
            case NORMAL -> 1024;
            case BATCH -> 2;
        };
    }

    /** cgroup v2 {@code cpu.weight} (1 to 10000). */
    static long weight(CpuClass cls) {
        return switch (cls) {
            case LATENCY_SENSITIVE -> 10000;
            case NORMAL -> 100;
            case BATCH -> 1;
        };
    }

    /** Sets the class on a running sandbox's cgroup: v1 {@code cpu.shares}, or v2 {@code cpu.weight} and {@code cpu.idle}. */
    static void apply(List<Path> cgroupDirs, CpuClass cls, String sandboxId) {
        boolean applied = false;
        try {
            for (Path dir : cgroupDirs) {
                Path shares = dir.resolve("cpu.shares");
                if (Files.exists(shares)) {
                    Files.writeString(shares, Long.toString(shares(cls)));
                    applied = true;
                }
                Path weight = dir.resolve("cpu.weight");
                if (Files.exists(weight)) {
                    Files.writeString(weight, Long.toString(weight(cls)));
                    Path idle = dir.resolve("cpu.idle");
                    if (Files.exists(idle)) {
                        // SCHED_IDLE for the whole group: batch work runs only when nothing else wants the CPU.
                        Files.writeString(idle, cls == CpuClass.BATCH ? "1" : "0");
                    }
                    applied = true;
                }
            }
        } catch (IOException e) {
            throw new DsecException("could not set CPU class " + cls + " on sandbox " + sandboxId + ": " + e.getMessage(), e);
        }
        if (!applied) {
            throw new DsecException("sandbox " + sandboxId + " has no cpu controller in " + cgroupDirs
                + ": mount the cgroup v1 cpu controller or enable cpu in the v2 tree's cgroup.subtree_control");
        }
    }
}
