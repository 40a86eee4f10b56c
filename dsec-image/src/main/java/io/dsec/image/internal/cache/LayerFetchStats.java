package io.dsec.image.internal.cache;

/**
 * What serving one layer on demand has cost so far. A snapshot; counters only grow.
 *
 * <p>{@code chunkHits + chunkMisses} is the number of chunk accesses by reads (a read spanning two chunks is two).
 * {@code fetches} counts store gets started for this layer: demand misses that were not already being fetched,
 * read-ahead and trace prefetches, full pulls, and the second get after a failed verification. A chunk shared by two
 * layers and fetched once is counted for the layer whose read started the fetch.
 *
 * @param digest               the layer
 * @param imageBytes           size of the layer image
 * @param bytesFetched         bytes received from the store (including bytes that then failed verification)
 * @param chunkHits            chunk accesses served from the cache
 * @param chunkMisses          chunk accesses that had to wait for a fetch
 * @param fetches              store gets
 * @param verificationFailures store gets whose bytes did not match their sha256
 * @param failedReads          reads answered with an errno
 * @param prefetchedChunks     chunks fetched into the cache ahead of being read (read-ahead, trace prefetch, full pull)
 * @param fetchLatencyCount    store gets with a latency recorded
 * @param fetchLatencySumMicros sum of those latencies
 * @param fetchLatencyP50Micros median latency (upper bound of its histogram bucket, within 25%)
 * @param fetchLatencyP99Micros 99th percentile latency (likewise)
 */
public record LayerFetchStats(String digest, long imageBytes, long bytesFetched, long chunkHits, long chunkMisses,
                              long fetches, long verificationFailures, long failedReads, long prefetchedChunks,
                              long fetchLatencyCount, long fetchLatencySumMicros, long fetchLatencyP50Micros,
                              long fetchLatencyP99Micros) {
}
