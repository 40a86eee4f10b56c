package io.dsec.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Memory of processes as the kernel accounts it: proportional set size (shared pages split among their users). */
final class ProcessMemory {
    private ProcessMemory() {
    }

    /** PSS of one process in KiB; 0 if it is gone. */
    static long pssKib(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/smaps_rollup"))) {
                if (line.startsWith("Pss:")) {
                    return Long.parseLong(line.replaceAll("\\D+", ""));
                }
            }
            return 0;
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The pids in a cgroup directory (v1 or v2). */
    static List<Long> cgroupPids(Path cgroupDir) {
        List<Long> pids = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(cgroupDir.resolve("cgroup.procs"))) {
                if (!line.isBlank()) {
                    pids.add(Long.parseLong(line.trim()));
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return pids;
    }

    /** The memory-controller cgroup directory of a process, on v1 or v2. */
    static Path memoryCgroupOf(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/cgroup"))) {
            String[] parts = line.split(":", 3);
            if (parts[1].equals("memory")) {
                return Path.of("/sys/fs/cgroup/memory" + parts[2]);
            }
            if (parts[1].isEmpty() && parts[0].equals("0") && Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"))) {
                return Path.of("/sys/fs/cgroup" + parts[2]);
            }
        }
        throw new IOException("no memory cgroup for pid " + pid);
    }

    /** memory.usage_in_bytes (v1) or memory.current (v2) of a cgroup, in KiB. */
    static long cgroupUsageKib(Path cgroupDir) throws IOException {
        for (String file : List.of("memory.usage_in_bytes", "memory.current")) {
            Path p = cgroupDir.resolve(file);
            if (Files.exists(p)) {
                return Long.parseLong(Files.readString(p).trim()) / 1024;
            }
        }
        throw new IOException("no memory usage file in " + cgroupDir);
    }
}
