package io.dsec.image;

import io.dsec.InvalidSpecException;
import io.dsec.Layer;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.image.internal.OnDemandLayerStore;
import io.dsec.image.internal.chunk.Chunker;
import io.dsec.spi.LayerStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Layers kept in shared storage and fetched by each host as they are read. Give it to the host builder:
 *
 * <pre>{@code
 * OnDemandImages images = OnDemandImages.from(BlobStores.directory(Path.of("/mnt/3fs/dsec"))).cacheBudget("50g").build();
 * try (SandboxHost host = Sandboxes.builder().layerStore(images).build()) {
 *     Layer base = host.layers().fromDirectory(LayerKind.BASE, "debian-12", rootfs);   // chunked and pushed
 *     ...
 *     try (Sandbox sb = host.create(SandboxSpec.of(Image.of(base)))) {
 *         ...
 *         images.stats(sb);                                                             // what this sandbox's reads cost
 *     }
 *     images.stats(base);                                                               // bytes fetched, hits, misses
 * }
 * }</pre>
 *
 * A host keeps only manifests and a chunk cache: the kernel mounts each layer image from a FUSE file whose reads fetch
 * the chunks they need, verify their sha256 and cache them. The FUSE connection is held by a small process outside the
 * JVM, so a restarted JVM takes over serving and running sandboxes only pause meanwhile.
 */
public final class OnDemandImages implements LayerStore.Factory {
    private final Settings settings;
    private final AtomicReference<OnDemandLayerStore> opened = new AtomicReference<>();

    private OnDemandImages(Settings settings) {
        this.settings = settings;
    }

    public static Builder from(BlobStore store) {
        return new Builder(Objects.requireNonNull(store, "store"));
    }

    @Override
    public LayerStore open(Path stateDir) {
        OnDemandLayerStore store = OnDemandLayerStore.open(stateDir, settings);
        opened.set(store);
        return store;
    }

    /** The checked settings; for tests that open a store directly. */
    public Settings settingsForTests() {
        return settings;
    }

    /** What loading {@code layer} has cost on the host this was opened for; empty if it was never mounted there. */
    public Optional<FetchStats> stats(Layer layer) {
        OnDemandLayerStore store = opened.get();
        return store == null ? Optional.empty() : store.stats(layer.digest());
    }

    /**
     * What the reads of {@code sandbox} have cost on the host this was opened for: its reads of on-demand layers, the
     * chunk hits and misses among them, and the bytes fetched on its behalf. A read counts for the sandbox when the
     * kernel issued it for a process in the sandbox's cgroup (a file read or page fault the page cache could not serve);
     * see {@link SandboxFetchStats} for what counts for whom. The figures stay available for a while after the sandbox
     * closes (an hour after its last read or query, for the most recent 16384 sandboxes).
     *
     * @return empty when none of the sandbox's reads reached this host's FUSE server (everything it read was in the
     *     page cache, or it is another host's sandbox), or its figures were forgotten
     */
    public Optional<SandboxFetchStats> stats(Sandbox sandbox) {
        Objects.requireNonNull(sandbox, "sandbox");
        OnDemandLayerStore store = opened.get();
        return store == null ? Optional.empty() : store.sandboxStats(sandbox.id());
    }

    /** Figures of the host's chunk cache: bytes used, budget, chunks, evictions. */
    public Optional<CacheStats> cacheStats() {
        OnDemandLayerStore store = opened.get();
        return store == null ? Optional.empty() : Optional.of(store.cacheStats());
    }

    /**
     * The host's chunk cache.
     *
     * @param usedBytes   bytes of chunks on disk
     * @param budgetBytes the most it may hold
     * @param chunks      chunks on disk
     * @param evictions   chunks evicted to stay within the budget
     */
    public record CacheStats(long usedBytes, long budgetBytes, int chunks, long evictions) {
    }

    /**
     * The settings, as the builder checked them.
     *
     * @param store            where layers live
     * @param cacheBudgetBytes the most the host's chunk cache may hold on disk
     * @param chunkSize        bytes per chunk of newly pushed layers
     * @param fetchConcurrency the most chunk fetches at once
     * @param fetchTimeout     how long one fetch may take before the read fails
     * @param readAheadChunks  chunks fetched ahead of a sequential reader
     * @param mode             on demand or full pull
     * @param recordWindow     how long the first sandboxes of an image record what they read; zero for never
     * @param prefetch         whether later sandboxes prefetch a recorded trace
     * @param pushConcurrency  chunk uploads at once when pushing
     * @param fuseThreads      FUSE worker threads
     * @param clock            time source of recording windows
     */
    public record Settings(BlobStore store, long cacheBudgetBytes, int chunkSize, int fetchConcurrency, Duration fetchTimeout,
                           int readAheadChunks, LoadMode mode, Duration recordWindow, boolean prefetch, int pushConcurrency,
                           int fuseThreads, Clock clock) {
    }

    /** Configures on-demand images; each call checks its value at once. */
    public static final class Builder {
        private final BlobStore store;
        private long cacheBudgetBytes = 20L << 30;
        private int chunkSize = Chunker.DEFAULT_CHUNK_SIZE;
        private int fetchConcurrency = 16;
        private Duration fetchTimeout = Duration.ofSeconds(30);
        // The kernel's own read-ahead through FUSE (1 MiB requests, their chunks fetched in parallel) already covers
        // sequential reads; our own read-ahead is for streaming readers of slow stores, on request.
        private int readAheadChunks = 0;
        private LoadMode mode = LoadMode.ON_DEMAND;
        private Duration recordWindow = Duration.ofSeconds(30);
        private boolean prefetch = true;
        private int pushConcurrency = 8;
        private int fuseThreads = 8;
        private Clock clock = Clock.systemUTC();

        private Builder(BlobStore store) {
            this.store = store;
        }

        /** Disk the host's chunk cache may use, such as {@code 50g}. Default 20 GiB. */
        public Builder cacheBudget(String size) {
            long bytes = SandboxSpec.parseSize("cacheBudget", size);
            if (bytes < (16L << 20)) {
                throw new InvalidSpecException("cacheBudget", size, "give at least 16m; the cache must hold the chunks being read at once");
            }
            this.cacheBudgetBytes = bytes;
            return this;
        }

        /** Bytes per chunk for layers pushed from this host: a power of two from 64 KiB to 2 MiB. Default 256 KiB. */
        public Builder chunkSize(int bytes) {
            if (bytes < Chunker.MIN_CHUNK_SIZE || bytes > Chunker.MAX_CHUNK_SIZE || Integer.bitCount(bytes) != 1) {
                throw new InvalidSpecException("chunkSize", bytes, "give a power of two from 65536 (64 KiB) to 2097152 (2 MiB)");
            }
            this.chunkSize = bytes;
            return this;
        }

        public Builder fetchConcurrency(int fetches) {
            this.fetchConcurrency = positive("fetchConcurrency", fetches, 1024);
            return this;
        }

        /** How long a chunk fetch may take; a read waiting longer fails. Default 30 s. */
        public Builder fetchTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new InvalidSpecException("fetchTimeout", timeout, "give a positive duration, such as Duration.ofSeconds(30)");
            }
            this.fetchTimeout = timeout;
            return this;
        }

        public Builder readAheadChunks(int chunks) {
            if (chunks < 0 || chunks > 256) {
                throw new InvalidSpecException("readAheadChunks", chunks, "give 0 (off) to 256");
            }
            this.readAheadChunks = chunks;
            return this;
        }

        public Builder mode(LoadMode loadMode) {
            this.mode = Objects.requireNonNull(loadMode, "mode");
            return this;
        }

        /** How long the first sandboxes of an image record the chunks they read; {@link Duration#ZERO} turns recording off. */
        public Builder recordWindow(Duration window) {
            if (window == null || window.isNegative()) {
                throw new InvalidSpecException("recordWindow", window, "give a duration, or Duration.ZERO to record nothing");
            }
            this.recordWindow = window;
            return this;
        }

        /** Whether sandboxes of an image with a recorded trace prefetch it in the background. Default on. */
        public Builder prefetch(boolean enabled) {
            this.prefetch = enabled;
            return this;
        }

        public Builder pushConcurrency(int uploads) {
            this.pushConcurrency = positive("pushConcurrency", uploads, 256);
            return this;
        }

        public Builder fuseThreads(int threads) {
            this.fuseThreads = positive("fuseThreads", threads, 256);
            return this;
        }

        /** The clock of recording windows; tests give one they move. */
        public Builder clock(Clock time) {
            this.clock = Objects.requireNonNull(time, "clock");
            return this;
        }

        public OnDemandImages build() {
            return new OnDemandImages(new Settings(store, cacheBudgetBytes, chunkSize, fetchConcurrency, fetchTimeout, readAheadChunks,
                mode, recordWindow, prefetch, pushConcurrency, fuseThreads, clock));
        }

        private static int positive(String field, int value, int max) {
            if (value < 1 || value > max) {
                throw new InvalidSpecException(field, value, "give 1 to " + max);
            }
            return value;
        }
    }
}
