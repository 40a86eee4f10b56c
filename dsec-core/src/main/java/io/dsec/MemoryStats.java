package io.dsec;

/**
 * Host memory and what dsec did about it, from {@link SandboxHost#memory()}: one read.
 *
 * @param memTotalBytes       host MemTotal
 * @param memAvailableBytes   host MemAvailable
 * @param cachedBytes         host page cache (Cached)
 * @param dirtyBytes          host dirty page cache waiting for writeback (Dirty)
 * @param psiAvailable        whether the kernel reports pressure stall information (/proc/pressure/memory)
 * @param psiSomeAvg10        share of the last 10 s in which some task stalled on memory, in percent; NaN without PSI
 * @param psiFullAvg10        share of the last 10 s in which all non-idle tasks stalled on memory, in percent; NaN without PSI
 * @param damonAvailable      whether DAMON's sysfs interface is there (for finding cold memory later)
 * @param reclaimedBytes      page cache bytes {@link SandboxHost#reclaimPageCache} freed since the host opened
 */
public record MemoryStats(long memTotalBytes, long memAvailableBytes, long cachedBytes, long dirtyBytes,
                          boolean psiAvailable, double psiSomeAvg10, double psiFullAvg10,
                          boolean damonAvailable, long reclaimedBytes) {
}
