package io.dsec.image.internal.cache;

import io.dsec.image.LayerManifest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches the chunks of an {@link AccessTrace} into the cache in trace order, in the background, at prefetch
 * priority (so they never take the fetch slots reserved for reads; see {@link ChunkFetcher}), at most
 * {@code parallelism} at a time. Best effort: a chunk that cannot be fetched is skipped. {@link #close()} stops it
 * from starting more.
 */
public final class Prefetcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Prefetcher.class);

    private final ChunkFetcher fetcher;
    private final LayerManifest manifest;
    private final List<Integer> order;
    private final int parallelism;
    private final LayerStatsCollector stats;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    // Guarded by this.
    private int next;
    private int outstanding;
    private int failed;
    private boolean started;
    private boolean closed;

    public Prefetcher(ChunkFetcher fetcher, LayerManifest manifest, AccessTrace trace, int parallelism,
                      LayerStatsCollector stats) {
        if (parallelism < 1) {
            throw new IllegalArgumentException("parallelism must be at least 1");
        }
        if (!trace.digest().equals(manifest.digest())) {
            throw new IllegalArgumentException("trace of " + trace.digest() + " given for layer " + manifest.digest());
        }
        this.fetcher = fetcher;
        this.manifest = manifest;
        this.order = trace.chunks();
        this.parallelism = parallelism;
        this.stats = stats;
    }

    /** Starts prefetching; returns this. */
    public Prefetcher start() {
        synchronized (this) {
            if (started) {
                return this;
            }
            started = true;
        }
        issue();
        return this;
    }

    /** Completes when every chunk of the trace was fetched or skipped, or when closed. Never fails. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        completion.complete(null);
    }

    private void issue() {
        while (true) {
            List<Integer> batch = new ArrayList<>();
            synchronized (this) {
                while (!closed && outstanding < parallelism && next < order.size()) {
                    int index = order.get(next++);
                    if (index >= 0 && index < manifest.chunkCount()) {
                        batch.add(index);
                        outstanding++;
                    }
                }
                if (batch.isEmpty()) {
                    if (closed || (outstanding == 0 && next >= order.size())) {
                        if (!closed && failed > 0) {
                            LOG.info("prefetch of layer {}: {} of {} chunks could not be fetched", manifest.digest(),
                                failed, order.size());
                        }
                        completion.complete(null);
                    }
                    return;
                }
            }
            boolean again = false;
            for (int index : batch) {
                CompletableFuture<Void> f = fetcher.prefetch(manifest.digest(), manifest.chunks().get(index), stats);
                if (f.isDone()) {
                    done(f, index);
                    again = true; // handled inline: loop rather than recurse
                } else {
                    f.whenComplete((v, e) -> {
                        done(f, index);
                        issue();
                    });
                }
            }
            if (!again) {
                return;
            }
        }
    }

    private void done(CompletableFuture<Void> f, int index) {
        synchronized (this) {
            outstanding--;
            if (f.isCompletedExceptionally()) {
                failed++;
                LOG.debug("prefetch of chunk {} of layer {} failed", index, manifest.digest());
            }
        }
    }
}
