package io.dsec.image;

/**
 * What loading one layer on this host has cost so far.
 *
 * @param digest              the layer's digest
 * @param imageBytes          size of the layer image
 * @param bytesFetched        bytes fetched from the store (chunks, after verification)
 * @param chunkHits           reads served from the host's chunk cache
 * @param chunkMisses         reads that had to wait for a fetch
 * @param fetches             chunk fetches from the store
 * @param verificationFailures chunks whose sha256 did not match what the manifest says
 * @param failedReads         reads answered with an error
 * @param prefetchedChunks    chunks fetched ahead of use (read-ahead and recorded traces)
 * @param fetchLatencyP50Micros median store latency of a chunk fetch
 * @param fetchLatencyP99Micros 99th percentile of it
 */
public record FetchStats(String digest, long imageBytes, long bytesFetched, long chunkHits, long chunkMisses, long fetches,
                         long verificationFailures, long failedReads, long prefetchedChunks, long fetchLatencyP50Micros,
                         long fetchLatencyP99Micros) {

    /** The fraction of the image fetched, 0 to 1. */
    public double fetchedFraction() {
        return imageBytes == 0 ? 0 : (double) bytesFetched / imageBytes;
    }
}
