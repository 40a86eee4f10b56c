package io.dsec.image.internal.cache;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobStore;
import io.dsec.image.LayerManifest;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches chunks from one {@link BlobStore} into a {@link ChunkCache}, verified.
 *
 * <ul>
 *   <li><b>Single flight:</b> concurrent requests for one chunk share one fetch (chunks are content-addressed, so
 *       this holds across layers too). A fetch stores the chunk in the cache before it completes, so a request that
 *       missed the cache and then finds no fetch in flight finds the chunk in the cache.</li>
 *   <li><b>Bounded, prioritised:</b> at most {@code maxConcurrentFetches} store gets run at once. Demand fetches
 *       (a read waits for them) are started before queued prefetches, and prefetches (read-ahead, traces) occupy at
 *       most {@code maxPrefetchFetches} of the slots, so slow prefetches never take every slot from reads. A demand
 *       request for a chunk whose prefetch is still queued moves it to the demand queue.</li>
 *   <li><b>Timeout:</b> a fetch that has not completed {@code fetchTimeout} after it started fails (and its thread
 *       is interrupted); its slot is freed when the store call returns.</li>
 *   <li><b>Verification:</b> bytes whose sha256 does not match the chunk name are fetched once more; if they fail
 *       again the fetch fails and an error names layer, chunk and store. Unverified bytes are never returned or
 *       cached.</li>
 * </ul>
 *
 * <p>The store and the cache are not closed by {@link #close()}; the executor is when the fetcher made it.
 */
public final class ChunkFetcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChunkFetcher.class);

    /** Who is waiting for a fetch: decides its queue. */
    public enum Priority { DEMAND, PREFETCH }

    /**
     * @param maxConcurrentFetches store gets running at once (at least 1)
     * @param maxPrefetchFetches   of those, how many may be prefetches; at most {@code maxConcurrentFetches - 1} when
     *                             that is 2 or more, so one slot is always left for reads
     * @param fetchTimeout         how long one chunk fetch (including the retry after a failed verification) may take
     */
    public record Config(int maxConcurrentFetches, int maxPrefetchFetches, Duration fetchTimeout) {
        public Config {
            if (maxConcurrentFetches < 1) {
                throw new IllegalArgumentException("maxConcurrentFetches must be at least 1");
            }
            if (maxPrefetchFetches < 0) {
                throw new IllegalArgumentException("maxPrefetchFetches must not be negative");
            }
            maxPrefetchFetches = Math.min(maxPrefetchFetches, Math.max(1, maxConcurrentFetches - 1));
            if (fetchTimeout.isNegative() || fetchTimeout.isZero()) {
                throw new IllegalArgumentException("fetchTimeout must be positive");
            }
        }

        public static Config defaults() {
            return new Config(16, 4, Duration.ofSeconds(30));
        }
    }

    private final BlobStore store;
    private final ChunkCache cache;
    private final Config config;
    private final Executor executor;
    private final ExecutorService ownedExecutor;
    private final ScheduledThreadPoolExecutor timer;
    private final ConcurrentHashMap<String, Flight> inflight = new ConcurrentHashMap<>();

    // Guarded by this.
    private final ArrayDeque<Flight> demandQueue = new ArrayDeque<>();
    private final ArrayDeque<Flight> prefetchQueue = new ArrayDeque<>();
    private int running;
    private int runningPrefetches;
    private volatile boolean closed;

    /** One fetch of one chunk, shared by everyone who asked for it while it ran. */
    private static final class Flight {
        final String hex;
        final String layer;
        final LayerStatsCollector stats;
        /** Where the requester that started this fetch (a sandbox) has its gets counted too; null for none. */
        final LayerStatsCollector requester;
        final boolean initiatedAsPrefetch;
        final CompletableFuture<byte[]> future = new CompletableFuture<>();
        // Guarded by the fetcher.
        boolean claimed;
        boolean inDemandQueue;
        // Guarded by this.
        Thread runner;
        ScheduledFuture<?> timeout;

        Flight(String hex, String layer, LayerStatsCollector stats, LayerStatsCollector requester,
               boolean initiatedAsPrefetch) {
            this.hex = hex;
            this.layer = layer;
            this.stats = stats;
            this.requester = requester;
            this.initiatedAsPrefetch = initiatedAsPrefetch;
        }

        void fetched(long bytes, long nanos) {
            stats.fetched(bytes, nanos);
            if (requester != null) {
                requester.fetched(bytes, nanos);
            }
        }

        void fetchFailed() {
            stats.fetchFailed();
            if (requester != null) {
                requester.fetchFailed();
            }
        }

        void verificationFailure() {
            stats.verificationFailure();
            if (requester != null) {
                requester.verificationFailure();
            }
        }

        void prefetched() {
            stats.prefetched();
            if (requester != null) {
                requester.prefetched();
            }
        }
    }

    public ChunkFetcher(BlobStore store, ChunkCache cache, Config config) {
        this(store, cache, config, null);
    }

    /**
     * @param executor runs store gets (never more than {@code maxConcurrentFetches} at once); null for a pool of
     *                 daemon threads owned and shut down by this fetcher
     */
    public ChunkFetcher(BlobStore store, ChunkCache cache, Config config, Executor executor) {
        this.store = store;
        this.cache = cache;
        this.config = config;
        if (executor == null) {
            this.ownedExecutor = Executors.newCachedThreadPool(daemonThreads("dsec-chunk-fetch"));
            this.executor = ownedExecutor;
        } else {
            this.ownedExecutor = null;
            this.executor = executor;
        }
        this.timer = new ScheduledThreadPoolExecutor(1, daemonThreads("dsec-chunk-fetch-timeout"));
        this.timer.setRemoveOnCancelPolicy(true);
    }

    public BlobStore store() {
        return store;
    }

    public ChunkCache cache() {
        return cache;
    }

    public Config config() {
        return config;
    }

    /** Fetches in flight or queued (for tests and diagnostics). */
    public int inflightCount() {
        return inflight.size();
    }

    /**
     * The verified bytes of a chunk, from the store (or from the cache if it got there meanwhile); stored in the cache
     * before the future completes. The future fails with an {@link ImageFetchException} (whose cause is a
     * {@link TimeoutException} for a timeout). Cancelling the returned future does not cancel the shared fetch.
     *
     * @param layer digest of the layer that wants it, for messages
     * @param stats where the store gets are counted, if this request starts the fetch
     */
    public CompletableFuture<byte[]> fetch(String layer, String hex, Priority priority, LayerStatsCollector stats) {
        return fetch(layer, hex, priority, stats, null, priority == Priority.PREFETCH);
    }

    /**
     * {@link #fetch(String, String, Priority, LayerStatsCollector)}, counting the store gets in {@code requester} too
     * (the counters of whoever asked, such as a sandbox; null for none) if this request starts the fetch.
     */
    public CompletableFuture<byte[]> fetch(String layer, String hex, Priority priority, LayerStatsCollector stats,
                                           LayerStatsCollector requester) {
        return fetch(layer, hex, priority, stats, requester, priority == Priority.PREFETCH);
    }

    private CompletableFuture<byte[]> fetch(String layer, String hex, Priority priority, LayerStatsCollector stats,
                                            LayerStatsCollector requester, boolean ahead) {
        Flight f = inflight.get(hex);
        boolean created = false;
        if (f == null) {
            Flight nf = new Flight(hex, layer, stats, requester, ahead);
            f = inflight.putIfAbsent(hex, nf);
            if (f == null) {
                f = nf;
                created = true;
                nf.future.whenComplete((b, e) -> finished(nf));
            }
        }
        enqueue(f, priority, created);
        return f.future.copy();
    }

    /** Makes sure a chunk is cached, at prefetch priority: completes at once when it already is. */
    public CompletableFuture<Void> prefetch(String layer, String hex, LayerStatsCollector stats) {
        return prefetch(layer, hex, stats, null);
    }

    /** {@link #prefetch(String, String, LayerStatsCollector)}, counting a fetch it starts in {@code requester} too (null for none). */
    public CompletableFuture<Void> prefetch(String layer, String hex, LayerStatsCollector stats, LayerStatsCollector requester) {
        if (cache.contains(hex)) {
            return CompletableFuture.completedFuture(null);
        }
        return fetch(layer, hex, Priority.PREFETCH, stats, requester, true).thenApply(b -> null);
    }

    /** {@link #pullAll(LayerManifest, LayerStatsCollector)} without stats. */
    public void pullAll(LayerManifest manifest) {
        pullAll(manifest, new LayerStatsCollector(manifest.digest(), manifest.sizeBytes()));
    }

    /**
     * Fetches every chunk of a layer that is not cached yet into the cache, up to {@code maxConcurrentFetches} at a
     * time at demand priority, and returns when all are cached.
     *
     * @throws ImageFetchException naming the first chunk that could not be fetched, or when the layer cannot fit in
     *                             the cache at all
     */
    public void pullAll(LayerManifest manifest, LayerStatsCollector stats) {
        String layer = manifest.digest();
        Map<String, Integer> distinct = new LinkedHashMap<>();
        for (int i = 0; i < manifest.chunkCount(); i++) {
            distinct.putIfAbsent(manifest.chunks().get(i), manifest.chunkLength(i));
        }
        long total = distinct.values().stream().mapToLong(Integer::longValue).sum();
        if (total > cache.budgetBytes()) {
            throw new ImageFetchException("cannot pull layer " + layer + " from " + store.describe() + ": its "
                + total + " bytes of chunks do not fit in the chunk cache budget of " + cache.budgetBytes()
                + " bytes; raise the budget or mount it on demand");
        }
        long t0 = System.nanoTime();
        Semaphore window = new Semaphore(config.maxConcurrentFetches());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<CompletableFuture<Void>> all = new ArrayList<>();
        int fetched = 0;
        try {
            for (String hex : distinct.keySet()) {
                if (failure.get() != null) {
                    break;
                }
                if (cache.contains(hex)) {
                    continue;
                }
                window.acquire();
                fetched++;
                CompletableFuture<Void> f = fetch(layer, hex, Priority.DEMAND, stats, null, true).handle((b, e) -> {
                    window.release();
                    if (e != null) {
                        failure.compareAndSet(null, unwrap(e));
                    }
                    return null;
                });
                all.add(f);
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ImageFetchException("pulling layer " + layer + " from " + store.describe() + " was interrupted");
        } catch (ExecutionException e) {
            failure.compareAndSet(null, e.getCause());
        }
        Throwable e = failure.get();
        if (e != null) {
            throw new ImageFetchException("cannot pull layer " + layer + " from " + store.describe() + ": "
                + e.getMessage(), e);
        }
        LOG.info("pulled layer {} from {}: {} chunks fetched, {} already cached, in {} ms", layer, store.describe(),
            fetched, distinct.size() - fetched, (System.nanoTime() - t0) / 1_000_000);
    }

    @Override
    public void close() {
        List<Flight> queued = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            queued.addAll(demandQueue);
            queued.addAll(prefetchQueue);
            demandQueue.clear();
            prefetchQueue.clear();
        }
        queued.addAll(inflight.values());
        ImageFetchException e = new ImageFetchException("chunk fetcher for " + store.describe() + " is closed");
        for (Flight f : queued) {
            fail(f, e);
        }
        timer.shutdownNow();
        if (ownedExecutor != null) {
            ownedExecutor.shutdownNow();
        }
    }

    // -- scheduling --

    private void enqueue(Flight f, Priority priority, boolean created) {
        List<Flight> rejected;
        synchronized (this) {
            if (closed) {
                rejected = List.of(f);
            } else {
                if (!f.claimed) {
                    if (priority == Priority.DEMAND && !f.inDemandQueue) {
                        f.inDemandQueue = true;
                        demandQueue.add(f);
                    } else if (priority == Priority.PREFETCH && created) {
                        prefetchQueue.add(f);
                    }
                }
                rejected = dispatch();
            }
        }
        for (Flight r : rejected) {
            fail(r, new ImageFetchException("chunk fetcher for " + store.describe()
                + " is closed or cannot start threads; chunk " + r.hex + " of layer " + r.layer + " not fetched"));
        }
    }

    /** Starts queued flights while slots are free; returns flights that could not be started. */
    private List<Flight> dispatch() {
        List<Flight> rejected = List.of();
        while (running < config.maxConcurrentFetches()) {
            Flight f = poll(demandQueue);
            boolean prefetch = false;
            if (f == null && runningPrefetches < config.maxPrefetchFetches()) {
                f = poll(prefetchQueue);
                prefetch = true;
            }
            if (f == null) {
                break;
            }
            f.claimed = true;
            running++;
            if (prefetch) {
                runningPrefetches++;
            }
            Flight run = f;
            boolean asPrefetch = prefetch;
            try {
                executor.execute(() -> run(run, asPrefetch));
            } catch (RejectedExecutionException e) {
                running--;
                if (prefetch) {
                    runningPrefetches--;
                }
                if (rejected.isEmpty()) {
                    rejected = new ArrayList<>();
                }
                rejected.add(f);
            }
        }
        return rejected;
    }

    private static Flight poll(ArrayDeque<Flight> queue) {
        Flight f;
        while ((f = queue.poll()) != null) {
            if (!f.claimed && !f.future.isDone()) {
                return f;
            }
        }
        return null;
    }

    private void slotFreed(boolean prefetch) {
        List<Flight> rejected;
        synchronized (this) {
            running--;
            if (prefetch) {
                runningPrefetches--;
            }
            rejected = closed ? List.of() : dispatch();
        }
        for (Flight r : rejected) {
            fail(r, new ImageFetchException("chunk fetcher for " + store.describe()
                + " cannot start threads; chunk " + r.hex + " of layer " + r.layer + " not fetched"));
        }
    }

    // A flight leaves the map before it completes: whoever is woken by it and asks again starts afresh (and then
    // finds the chunk in the cache, or fetches it again after a failure).
    private boolean succeed(Flight f, byte[] bytes) {
        inflight.remove(f.hex, f);
        return f.future.complete(bytes);
    }

    private boolean fail(Flight f, Throwable e) {
        inflight.remove(f.hex, f);
        return f.future.completeExceptionally(e);
    }

    private void finished(Flight f) {
        inflight.remove(f.hex, f);
        synchronized (f) {
            if (f.timeout != null) {
                f.timeout.cancel(false);
            }
        }
    }

    // -- one fetch --

    private void run(Flight f, boolean asPrefetch) {
        try {
            if (f.future.isDone()) {
                return;
            }
            synchronized (f) {
                f.runner = Thread.currentThread();
                try {
                    f.timeout = timer.schedule(() -> timedOut(f), config.fetchTimeout().toNanos(),
                        TimeUnit.NANOSECONDS);
                } catch (RejectedExecutionException closing) {
                    // The fetcher is closing; close() fails the flight.
                }
            }
            fetchAndStore(f);
        } catch (Throwable e) {
            boolean first = fail(f, e instanceof ImageFetchException ? e
                : new ImageFetchException("fetching chunk " + f.hex + " of layer " + f.layer + " from "
                    + store.describe() + " failed: " + e, e));
            if (first && !closed) {
                LOG.error("cannot fetch chunk {} of layer {} from {}: {}", f.hex, f.layer, store.describe(),
                    e.getMessage() != null ? e.getMessage() : e.toString());
            }
        } finally {
            synchronized (f) {
                f.runner = null;
            }
            Thread.interrupted(); // an interrupt meant for this fetch must not leak into the next task
            slotFreed(asPrefetch);
        }
    }

    private void fetchAndStore(Flight f) throws ChunkCacheException {
        Optional<byte[]> cached = cache.readAll(f.hex);
        if (cached.isPresent()) {
            succeed(f, cached.get());
            return;
        }
        String key = LayerManifest.chunkKey(f.hex);
        for (int attempt = 1; attempt <= 2; attempt++) {
            long t0 = System.nanoTime();
            byte[] bytes;
            try {
                bytes = store.get(key);
            } catch (RuntimeException e) {
                f.fetchFailed();
                throw e;
            }
            f.fetched(bytes.length, System.nanoTime() - t0);
            String actual = ChunkCache.sha256Hex(bytes);
            if (actual.equals(f.hex)) {
                if (attempt > 1) {
                    LOG.info("chunk {} of layer {} from {} verified on the second fetch", f.hex, f.layer,
                        store.describe());
                }
                // Cached even when the fetch has timed out meanwhile: the bytes are good and the retry will want them.
                cache.put(f.hex, bytes);
                if (f.initiatedAsPrefetch && !f.future.isDone()) {
                    f.prefetched(); // before completing, so whoever waits for it sees it counted
                }
                succeed(f, bytes);
                return;
            }
            f.verificationFailure();
            if (attempt == 1) {
                LOG.warn("chunk {} of layer {} from {} failed sha256 verification ({} bytes, sha256 {}); fetching it"
                    + " again", f.hex, f.layer, store.describe(), bytes.length, actual);
            } else {
                throw new ImageFetchException("chunk " + f.hex + " of layer " + f.layer + " from " + store.describe()
                    + " failed sha256 verification twice (" + bytes.length + " bytes, sha256 " + actual + "); the"
                    + " blob in the store is corrupt: push the layer again");
            }
        }
    }

    private void timedOut(Flight f) {
        ImageFetchException e = new ImageFetchException("fetching chunk " + f.hex + " of layer " + f.layer + " from "
            + store.describe() + " timed out after " + config.fetchTimeout().toMillis() + " ms",
            new TimeoutException("chunk fetch timed out"));
        if (fail(f, e)) {
            LOG.error("{}; the store is slow or unreachable", e.getMessage());
            synchronized (f) {
                if (f.runner != null) {
                    f.runner.interrupt();
                }
            }
        }
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof java.util.concurrent.CompletionException || e instanceof ExecutionException)
            && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    static ThreadFactory daemonThreads(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
