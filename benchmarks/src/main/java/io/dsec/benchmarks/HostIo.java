package io.dsec.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the host's kernel says about I/O: page cache residency, bytes written to disk, and dropping caches. */
final class HostIo {
    private HostIo() {
    }

    /** Writes dirty pages and drops clean caches, so the next phase starts cold. */
    static void dropCaches() throws IOException, InterruptedException {
        new ProcessBuilder("sync").start().waitFor();
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
    }

    /** Bytes of {@code file} in the page cache (util-linux fincore). */
    static long residentBytes(Path file) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("fincore", "--bytes", "--noheadings", "--output", "RES", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        return Long.parseLong(out.split("\\s+")[0]);
    }

    /** Bytes written so far to every block device that is not a partition, loop or ram device (after a sync). */
    static long diskBytesWritten() throws IOException, InterruptedException {
        new ProcessBuilder("sync").start().waitFor();
        long sectors = 0;
        try (var devices = Files.list(Path.of("/sys/block"))) {
            for (Path dev : devices.toList()) {
                String name = dev.getFileName().toString();
                if (name.startsWith("loop") || name.startsWith("ram") || name.startsWith("zram")) {
                    continue;
                }
                String[] f = Files.readString(dev.resolve("stat")).trim().split("\\s+");
                sectors += Long.parseLong(f[6]);
            }
        }
        return sectors * 512;
    }
}
