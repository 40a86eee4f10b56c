package io.dsec.image.internal.cache;

import io.dsec.image.LayerManifest;
import io.dsec.image.SandboxFetchStats;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** The mutable counters behind {@link SandboxFetchStats}, for one sandbox; safe for concurrent use. */
public final class SandboxStatsCollector {
    private final String sandboxId;
    /** Hits, misses, failed reads and the store gets started on the sandbox's behalf. */
    private final LayerStatsCollector chunks;
    private final LongAdder reads = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final ConcurrentHashMap<String, Long> layers = new ConcurrentHashMap<>();

    public SandboxStatsCollector(String sandboxId) {
        this.sandboxId = sandboxId;
        this.chunks = new LayerStatsCollector("sandbox:" + sandboxId, 0);
    }

    public String sandboxId() {
        return sandboxId;
    }

    /** The counters a {@link ChunkFetcher} adds the sandbox's gets to. */
    LayerStatsCollector chunks() {
        return chunks;
    }

    /** A read of {@code layer} started. */
    void read(LayerManifest layer) {
        reads.increment();
        if (layers.get(layer.digest()) == null) {
            layers.putIfAbsent(layer.digest(), layer.sizeBytes());
        }
    }

    /** A read returned {@code bytes} bytes. */
    void readDone(long bytes) {
        bytesRead.add(bytes);
    }

    public SandboxFetchStats snapshot() {
        LayerFetchStats c = chunks.snapshot();
        long imageBytes = 0;
        int count = 0;
        for (Long size : layers.values()) {
            imageBytes += size;
            count++;
        }
        return new SandboxFetchStats(sandboxId, count, imageBytes, reads.sum(), bytesRead.sum(), c.chunkHits(), c.chunkMisses(),
            c.fetches(), c.bytesFetched(), c.verificationFailures(), c.failedReads(), c.prefetchedChunks(),
            c.fetchLatencyP50Micros(), c.fetchLatencyP99Micros());
    }
}
