package io.dsec.image;

/**
 * What one sandbox's reads of on-demand layers have cost on this host so far, from
 * {@link OnDemandImages#stats(io.dsec.Sandbox)}. A snapshot; counters only grow.
 *
 * <p>A read is the sandbox's when the kernel issued it for a process in the sandbox's cgroup: the process read a file
 * or faulted in a page of a layer and the page cache did not have it. Reads for no sandbox (host tools, the runtime
 * setting the sandbox up, trace prefetches, full pulls) are in no sandbox's figures, only in the layers'
 * ({@link OnDemandImages#stats(io.dsec.Layer)}). A chunk fetch counts for the sandbox whose read started it: a read that
 * waits for a fetch another sandbox started is a miss for both, but its bytes are fetched on the first one's behalf.
 * Read-ahead that a sandbox's sequential read starts is fetched on its behalf too ({@code prefetchedChunks}).
 *
 * @param sandboxId             the sandbox
 * @param layers                layers it has read from
 * @param imageBytes            their total image size
 * @param reads                 FUSE reads on its behalf
 * @param bytesRead             bytes those reads returned
 * @param chunkHits             chunk accesses of its reads served from the host's chunk cache
 * @param chunkMisses           chunk accesses of its reads that had to wait for a fetch
 * @param fetches               store gets started on its behalf
 * @param bytesFetched          bytes those gets received
 * @param verificationFailures  of those gets, how many did not match their sha256
 * @param failedReads           its reads answered with an error
 * @param prefetchedChunks      chunks fetched ahead of its sequential reads
 * @param fetchLatencyP50Micros median store latency of the gets on its behalf
 * @param fetchLatencyP99Micros 99th percentile of it
 */
public record SandboxFetchStats(String sandboxId, int layers, long imageBytes, long reads, long bytesRead, long chunkHits,
                                long chunkMisses, long fetches, long bytesFetched, long verificationFailures, long failedReads,
                                long prefetchedChunks, long fetchLatencyP50Micros, long fetchLatencyP99Micros) {

    /** Bytes fetched on its behalf as a fraction of the images it read from, 0 to 1 (more only if chunks were fetched again). */
    public double fetchedFraction() {
        return imageBytes == 0 ? 0 : (double) bytesFetched / imageBytes;
    }
}
