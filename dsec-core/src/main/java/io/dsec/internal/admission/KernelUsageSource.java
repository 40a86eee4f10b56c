package io.dsec.internal.admission;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * Capacity and real use as the kernel reports them: {@code /proc/meminfo}, {@code pid_max}, the processors the JVM
 * may use, the state directory's file system, and each sandbox's cgroup (v1 memory and cpuacct, or v2).
 */
public final class KernelUsageSource implements UsageSource {
    private final Path proc;
    private final Path stateDir;
    private final FileStore store;

    public KernelUsageSource(Path stateDir) {
        this(Path.of("/proc"), stateDir);
    }

    KernelUsageSource(Path proc, Path stateDir) {
        this.proc = proc;
        this.stateDir = stateDir;
        try {
            this.store = Files.getFileStore(stateDir);
        } catch (IOException e) {
            throw new UncheckedIOException("reading the file system of " + stateDir, e);
        }
    }

    @Override
    public Capacity capacity() {
        long memTotal = meminfo("MemTotal:");
        long pids = readLong(proc.resolve("sys/kernel/pid_max"), 32768);
        long threads = readLong(proc.resolve("sys/kernel/threads-max"), Long.MAX_VALUE);
        long disk;
        try {
            disk = store.getTotalSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the size of the file system of " + stateDir, e);
        }
        return new Capacity(memTotal, Runtime.getRuntime().availableProcessors(), Math.min(pids, threads), disk);
    }

    @Override
    public HostUse host() {
        String text = read(proc.resolve("meminfo"));
        long total = field(text, "MemTotal:");
        long available = field(text, "MemAvailable:");
        if (available < 0) { // kernels before 3.14
            available = Math.max(0, field(text, "MemFree:")) + Math.max(0, field(text, "Cached:"));
        }
        long free;
        try {
            free = store.getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the free space of " + stateDir, e);
        }
        return new HostUse(Math.max(0, total - available), free);
    }

    @Override
    public SandboxUse sandbox(List<Path> cgroupDirs) {
        long memory = -1;
        long cpu = -1;
        boolean any = false;
        for (Path dir : cgroupDirs) {
            if (!Files.isDirectory(dir)) {
                continue;
            }
            any = true;
            try {
                if (memory < 0) {
                    memory = memoryOf(dir);
                }
                if (cpu < 0) {
                    cpu = cpuOf(dir);
                }
            } catch (IOException | UncheckedIOException e) {
                // the sandbox is going away; what was read stands
            }
        }
        return any ? new SandboxUse(memory, cpu) : null;
    }

    /** v2 memory.current minus inactive_file, or v1 memory.usage_in_bytes minus total_inactive_file; -1 if neither. */
    static long memoryOf(Path dir) throws IOException {
        Path v2 = dir.resolve("memory.current");
        if (Files.exists(v2)) {
            long current = Long.parseLong(text(v2).trim());
            return Math.max(0, current - Math.max(0, statField(dir.resolve("memory.stat"), "inactive_file")));
        }
        Path v1 = dir.resolve("memory.usage_in_bytes");
        if (Files.exists(v1)) {
            long usage = Long.parseLong(text(v1).trim());
            return Math.max(0, usage - Math.max(0, statField(dir.resolve("memory.stat"), "total_inactive_file")));
        }
        return -1;
    }

    /** v1 cpuacct.usage (ns), or v2 cpu.stat usage_usec; -1 if neither. */
    static long cpuOf(Path dir) throws IOException {
        Path v1 = dir.resolve("cpuacct.usage");
        if (Files.exists(v1)) {
            return Long.parseLong(text(v1).trim());
        }
        Path v2 = dir.resolve("cpu.stat");
        if (Files.exists(v2)) {
            long usec = statField(v2, "usage_usec");
            return usec < 0 ? -1 : usec * 1000;
        }
        return -1;
    }

    private static long statField(Path file, String key) throws IOException {
        if (!Files.exists(file)) {
            return -1;
        }
        for (String line : text(file).split("\n")) {
            int sp = line.indexOf(' ');
            if (sp > 0 && line.regionMatches(0, key, 0, sp) && sp == key.length()) {
                return Long.parseLong(line.substring(sp + 1).trim());
            }
        }
        return -1;
    }

    private long meminfo(String key) {
        long v = field(read(proc.resolve("meminfo")), key);
        if (v < 0) {
            throw new IllegalStateException("no " + key + " in " + proc.resolve("meminfo"));
        }
        return v;
    }

    /** A {@code /proc/meminfo} field in bytes (the file gives kB), or -1. */
    static long field(String meminfo, String key) {
        for (String line : meminfo.split("\n")) {
            if (line.startsWith(key)) {
                String[] parts = line.substring(key.length()).trim().split("\\s+");
                long v = Long.parseLong(parts[0]);
                return parts.length > 1 && parts[1].equalsIgnoreCase("kB") ? v * 1024 : v;
            }
        }
        return -1;
    }

    private static long readLong(Path file, long otherwise) {
        try {
            return Long.parseLong(text(file).trim());
        } catch (NoSuchFileException e) {
            return otherwise;
        } catch (IOException | NumberFormatException e) {
            return otherwise;
        }
    }

    private static String read(Path file) {
        try {
            return text(file);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file, e);
        }
    }

    /**
     * A file of /proc or /sys as text. Not Files.readString: it sizes its read by the file's size, which these files
     * report as 0, and on some kernels then gets only the first byte of a sysctl such as pid_max.
     */
    static String text(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        }
    }
}
