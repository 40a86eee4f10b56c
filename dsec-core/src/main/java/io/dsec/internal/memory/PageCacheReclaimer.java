package io.dsec.internal.memory;

import io.dsec.DsecException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reclaims page cache from one sandbox's memory cgroup. On cgroup v2 it writes the cgroup's inactive file bytes to
 * {@code memory.reclaim}. On v1, which has no such file, it lowers {@code memory.limit_in_bytes} for a moment to usage
 * minus the inactive file bytes (never below what is not page cache plus a margin), so the kernel reclaims to fit, and
 * then restores the original limit. Returns usage before minus usage after (0 if it did not drop).
 */
public final class PageCacheReclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(PageCacheReclaimer.class);
    /** On v1, the lowered limit leaves at least this much above what is not page cache, so the sandbox can still allocate. */
    static final long V1_MARGIN = 16L << 20;
    private static final int RESTORE_ATTEMPTS = 5;

    /** The sandbox's memory cgroup: the v2 one if it has the memory controller, else the v1 memory hierarchy's one. */
    public long reclaim(List<Path> cgroupDirs) {
        for (Path dir : cgroupDirs) {
            if (Files.exists(dir.resolve("memory.reclaim"))) {
                return reclaimV2(dir);
            }
        }
        for (Path dir : cgroupDirs) {
            if (Files.exists(dir.resolve("memory.limit_in_bytes"))) {
                return reclaimV1(dir);
            }
        }
        throw new DsecException("no memory cgroup among " + cgroupDirs
            + ": the sandbox is gone, or the memory controller is not enabled for it");
    }

    long reclaimV2(Path dir) {
        long before = readLong(dir.resolve("memory.current"));
        long inactiveFile = parseStat(read(dir.resolve("memory.stat"))).getOrDefault("inactive_file", 0L);
        if (inactiveFile <= 0) {
            return 0;
        }
        try {
            Files.writeString(dir.resolve("memory.reclaim"), Long.toString(inactiveFile));
        } catch (IOException e) {
            if (!couldNotReclaimAll(e)) {
                throw new UncheckedIOException("writing " + dir.resolve("memory.reclaim"), e);
            }
            LOG.debug("{}: reclaimed less than the {} bytes asked ({})", dir, inactiveFile, e.getMessage());
        }
        return Math.max(0, before - readLong(dir.resolve("memory.current")));
    }

    long reclaimV1(Path dir) {
        Path limitFile = dir.resolve("memory.limit_in_bytes");
        String originalLimit = read(limitFile).trim();
        long limit = Long.parseLong(originalLimit);
        long before = readLong(dir.resolve("memory.usage_in_bytes"));
        long target = v1Target(before, parseStat(read(dir.resolve("memory.stat"))));
        if (target >= before || target >= limit) {
            return 0;
        }
        try {
            Files.writeString(limitFile, Long.toString(target));
        } catch (IOException e) {
            // EBUSY: the kernel could not reclaim down to the target; it keeps the old limit and what it did reclaim stays reclaimed.
            if (!couldNotReclaimAll(e)) {
                throw new UncheckedIOException("writing " + limitFile, e);
            }
            LOG.debug("{}: could not reclaim down to {} bytes ({})", dir, target, e.getMessage());
        } finally {
            restore(limitFile, originalLimit);
        }
        return Math.max(0, before - readLong(dir.resolve("memory.usage_in_bytes")));
    }

    /** Usage minus inactive file pages, but never below what is not page cache (anon, kernel) plus the margin. */
    static long v1Target(long usage, Map<String, Long> stat) {
        long inactiveFile = stat.getOrDefault("total_inactive_file", stat.getOrDefault("inactive_file", 0L));
        long cache = stat.getOrDefault("total_cache", stat.getOrDefault("cache", 0L));
        long anon = stat.getOrDefault("total_rss", stat.getOrDefault("rss", 0L));
        long floor = Math.max(anon, usage - cache) + V1_MARGIN;
        long target = Math.max(usage - inactiveFile, floor);
        return target & ~4095L;
    }

    private static void restore(Path limitFile, String originalLimit) {
        IOException last = null;
        for (int attempt = 1; attempt <= RESTORE_ATTEMPTS; attempt++) {
            try {
                Files.writeString(limitFile, originalLimit);
                if (read(limitFile).trim().equals(originalLimit)) {
                    return;
                }
                LOG.error("RESTORING THE MEMORY LIMIT FAILED: {} reads back {} instead of {} (attempt {}/{})", limitFile,
                    read(limitFile).trim(), originalLimit, attempt, RESTORE_ATTEMPTS);
            } catch (IOException | UncheckedIOException e) {
                last = e instanceof IOException io ? io : ((UncheckedIOException) e).getCause();
                LOG.error("RESTORING THE MEMORY LIMIT FAILED: cannot write {} back to {} (attempt {}/{}): {}", limitFile,
                    originalLimit, attempt, RESTORE_ATTEMPTS, e.getMessage());
            }
        }
        throw new DsecException("could not restore the memory limit " + limitFile + " to " + originalLimit + " after "
            + RESTORE_ATTEMPTS + " attempts: the sandbox is left with a lower limit; write it back by hand", last);
    }

    /** EAGAIN (v2 memory.reclaim) or EBUSY (v1 limit): the kernel reclaimed less than asked, which is not an error. */
    static boolean couldNotReclaimAll(IOException e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("Resource temporarily unavailable") || m.contains("Device or resource busy");
    }

    /** Parses memory.stat ({@code key value} lines), v1 or v2. */
    public static Map<String, Long> parseStat(String text) {
        Map<String, Long> out = new HashMap<>();
        for (String line : text.split("\n")) {
            String[] kv = line.trim().split("\\s+");
            if (kv.length == 2) {
                try {
                    out.put(kv[0], Long.parseLong(kv[1]));
                } catch (NumberFormatException e) {
                    // not a counter
                }
            }
        }
        return out;
    }

    private static long readLong(Path file) {
        return Long.parseLong(read(file).trim());
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file, e);
        }
    }
}
