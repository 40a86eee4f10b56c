package io.dsec.image.internal.cache;

import io.dsec.ImageFetchException;
import io.dsec.image.LayerManifest;
import io.dsec.image.internal.fuse.FuseErrnoException;
import io.dsec.image.internal.fuse.FuseFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One layer image served to FUSE from its chunks: cache hits are read from the {@link ChunkCache}, misses are fetched
 * (all chunks a read spans at once) through the {@link ChunkFetcher} and copied from the verified bytes.
 *
 * <p>Read-ahead: a read that starts where the previous read of this reader ended is sequential; once a sequential run
 * has covered two chunks, the next {@code readAheadChunks} chunks after each read are prefetched in the background
 * (each chunk is requested once per sequential run). A read waits at most {@code readTimeout} for its chunks and then fails with ETIMEDOUT; data that
 * cannot be fetched or verified fails it with EIO.
 *
 * <p>Reads through {@link #read(long, ByteBuffer, int)} are counted for the sandbox the requesting pid runs in, as
 * {@link SandboxAttribution} finds it: its reads, hits, misses, and the fetches (demand and read-ahead) its reads start.
 *
 * <p>Safe for concurrent reads. {@link #close()} stops read-ahead and prefetches started through this reader; reads
 * after it fail with EIO.
 */
public final class OnDemandLayerReader implements FuseFile, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OnDemandLayerReader.class);

    /**
     * @param readAheadChunks chunks to prefetch past a sequential read (0: no read-ahead)
     * @param readTimeout     how long a read waits for its chunks to be fetched
     */
    public record Config(int readAheadChunks, Duration readTimeout) {
        public Config {
            if (readAheadChunks < 0) {
                throw new IllegalArgumentException("readAheadChunks must not be negative");
            }
            if (readTimeout.isNegative() || readTimeout.isZero()) {
                throw new IllegalArgumentException("readTimeout must be positive");
            }
        }

        public static Config defaults() {
            return new Config(4, Duration.ofSeconds(30));
        }
    }

    private final LayerManifest manifest;
    private final ChunkCache cache;
    private final ChunkFetcher fetcher;
    private final Config config;
    private final LayerStatsCollector stats;
    private final SandboxAttribution sandboxes;
    private final AtomicLong lastEnd = new AtomicLong(-1);
    private final AtomicLong runStart = new AtomicLong(0);
    private final AtomicInteger readAheadUpTo = new AtomicInteger(-1);
    private final Set<CompletableFuture<Void>> readAheads = ConcurrentHashMap.newKeySet();
    private final Set<Prefetcher> prefetchers = ConcurrentHashMap.newKeySet();
    private volatile AccessRecorder recorder;
    private volatile boolean closed;

    public OnDemandLayerReader(LayerManifest manifest, ChunkCache cache, ChunkFetcher fetcher, Config config) {
        this(manifest, cache, fetcher, config, null);
    }

    /** @param sandboxes finds the sandbox a read is for; null to count reads for no sandbox */
    public OnDemandLayerReader(LayerManifest manifest, ChunkCache cache, ChunkFetcher fetcher, Config config,
                               SandboxAttribution sandboxes) {
        if (manifest.chunkSize() <= 0 || manifest.chunkCount() != expectedChunks(manifest)) {
            throw new IllegalArgumentException("manifest of layer " + manifest.digest() + " has " + manifest.chunkCount()
                + " chunks of " + manifest.chunkSize() + " bytes for " + manifest.sizeBytes() + " bytes");
        }
        this.manifest = manifest;
        this.cache = cache;
        this.fetcher = fetcher;
        this.config = config;
        this.stats = new LayerStatsCollector(manifest.digest(), manifest.sizeBytes());
        this.sandboxes = sandboxes;
    }

    private static long expectedChunks(LayerManifest m) {
        return (m.sizeBytes() + m.chunkSize() - 1) / m.chunkSize();
    }

    public LayerManifest manifest() {
        return manifest;
    }

    @Override
    public long size() {
        return manifest.sizeBytes();
    }

    public LayerFetchStats stats() {
        return stats.snapshot();
    }

    /** The counters of this layer, for a {@link Prefetcher} or {@link ChunkFetcher#pullAll} to add to. */
    public LayerStatsCollector statsCollector() {
        return stats;
    }

    /** Records first reads of chunks into {@code recorder} (null to stop). */
    public void record(AccessRecorder recorder) {
        this.recorder = recorder;
    }

    /** Starts prefetching a trace of this layer in the background; closed with this reader. */
    public Prefetcher prefetch(AccessTrace trace, int parallelism) {
        Prefetcher p = new Prefetcher(fetcher, manifest, trace, parallelism, stats);
        prefetchers.add(p);
        p.completion().whenComplete((v, e) -> prefetchers.remove(p));
        if (closed) {
            p.close();
            return p;
        }
        return p.start();
    }

    @Override
    public void read(long offset, ByteBuffer into) throws FuseErrnoException {
        read(offset, into, 0);
    }

    @Override
    public void read(long offset, ByteBuffer into, int pid) throws FuseErrnoException {
        SandboxStatsCollector sandbox = sandboxes == null ? null : sandboxes.forPid(pid);
        if (sandbox == null) {
            read(offset, into, pid, null, null);
            return;
        }
        sandbox.read(manifest);
        int before = into.position();
        read(offset, into, pid, sandbox, sandbox.chunks());
        sandbox.readDone(into.position() - before);
    }

    private void read(long offset, ByteBuffer into, int pid, SandboxStatsCollector sandbox, LayerStatsCollector sbStats)
        throws FuseErrnoException {
        if (closed) {
            throw new FuseErrnoException(FuseErrnoException.EIO, "layer " + manifest.digest() + " is closed", null);
        }
        long size = manifest.sizeBytes();
        if (offset < 0) {
            throw new FuseErrnoException(FuseErrnoException.EIO, "negative offset " + offset, null);
        }
        if (offset >= size || !into.hasRemaining()) {
            return;
        }
        long deadline = System.nanoTime() + config.readTimeout().toNanos();
        int len = (int) Math.min(into.remaining(), size - offset);
        long end = offset + len;
        int chunkSize = manifest.chunkSize();
        int first = (int) (offset / chunkSize);
        int last = (int) ((end - 1) / chunkSize);
        int base = into.position();
        AccessRecorder rec = recorder;

        // Pass 1: serve hits, start fetches of all misses.
        List<Pending> pending = null;
        for (int index = first; index <= last; index++) {
            long chunkStart = manifest.chunkOffset(index);
            long from = Math.max(offset, chunkStart);
            long to = Math.min(end, chunkStart + manifest.chunkLength(index));
            int count = (int) (to - from);
            int dst = base + (int) (from - offset);
            int within = (int) (from - chunkStart);
            String hex = manifest.chunks().get(index);
            if (rec != null) {
                rec.onRead(index);
            }
            if (readCached(hex, within, into, dst, count)) {
                stats.hit();
                if (sbStats != null) {
                    sbStats.hit();
                }
            } else {
                stats.miss();
                if (sbStats != null) {
                    sbStats.miss();
                }
                if (pending == null) {
                    pending = new ArrayList<>(last - index + 1);
                }
                pending.add(new Pending(index, within, dst, count,
                    fetcher.fetch(manifest.digest(), hex, ChunkFetcher.Priority.DEMAND, stats, sbStats)));
            }
        }
        // Pass 2: wait for the misses and copy.
        if (pending != null) {
            for (Pending p : pending) {
                byte[] bytes = await(p, offset, len, deadline, pid, sandbox, sbStats);
                into.put(p.dst, bytes, p.within, p.count);
            }
        }
        into.position(base + len);
        readAhead(offset, end, last, sbStats);
    }

    private record Pending(int index, int within, int dst, int count, CompletableFuture<byte[]> future) {
    }

    private boolean readCached(String hex, int within, ByteBuffer into, int dst, int count) {
        Optional<ChunkCache.Chunk> lease = cache.open(hex);
        if (lease.isEmpty()) {
            return false;
        }
        try (ChunkCache.Chunk c = lease.get()) {
            ByteBuffer window = into.duplicate();
            window.limit(dst + count).position(dst);
            try {
                c.read(within, window);
                return true;
            } catch (IOException e) {
                LOG.warn("dropping chunk {} from the cache and fetching it again: {}", hex, e.getMessage());
                c.invalidate();
                return false;
            }
        }
    }

    private byte[] await(Pending p, long offset, int len, long deadline, int pid, SandboxStatsCollector sandbox,
                         LayerStatsCollector sbStats) throws FuseErrnoException {
        String hex = manifest.chunks().get(p.index);
        try {
            long wait = deadline - System.nanoTime();
            return p.future.get(Math.max(0, wait), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            p.future.cancel(false); // only this read's copy of the shared fetch
            throw failed(FuseErrnoException.ETIMEDOUT, "read of layer " + manifest.digest() + " at " + offset + "+"
                + len + requester(pid, sandbox) + " timed out after " + config.readTimeout().toMillis() + " ms waiting for chunk "
                + p.index + " (" + hex + ") from " + fetcher.store().describe(), e, sbStats);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failed(FuseErrnoException.EIO, "read of layer " + manifest.digest() + " at " + offset + "+" + len
                + requester(pid, sandbox) + " was interrupted", e, sbStats);
        } catch (ExecutionException e) {
            Throwable cause = ChunkFetcher.unwrap(e);
            int errno = cause instanceof ImageFetchException && cause.getCause() instanceof TimeoutException
                ? FuseErrnoException.ETIMEDOUT : FuseErrnoException.EIO;
            throw failed(errno, "read of layer " + manifest.digest() + " at " + offset + "+" + len + requester(pid, sandbox)
                + " failed: chunk " + p.index + ": " + cause.getMessage(), cause, sbStats);
        }
    }

    private FuseErrnoException failed(int errno, String message, Throwable cause, LayerStatsCollector sbStats) {
        stats.failedRead();
        if (sbStats != null) {
            sbStats.failedRead();
        }
        LOG.warn("{} (errno {})", message, errno);
        return new FuseErrnoException(errno, message, cause);
    }

    private static String requester(int pid, SandboxStatsCollector sandbox) {
        if (pid <= 0) {
            return "";
        }
        return " for pid " + pid + (sandbox == null ? "" : " of sandbox " + sandbox.sandboxId());
    }

    private void readAhead(long offset, long end, int lastIndex, LayerStatsCollector sbStats) {
        int k = config.readAheadChunks();
        if (k == 0) {
            return;
        }
        long previousEnd = lastEnd.getAndSet(end);
        if (offset != previousEnd) {
            readAheadUpTo.set(lastIndex); // a new run: read-ahead starts again after it
            runStart.set(offset);
            return;
        }
        // Only a run that has streamed two chunks' worth is a sequential reader worth reading ahead for: EROFS metadata
        // and small files also produce adjacent reads, and fetching ahead of those only inflates what a task fetches.
        if (end - runStart.get() < 2L * manifest.chunkSize()) {
            return;
        }
        int to = Math.min(lastIndex + k, manifest.chunkCount() - 1);
        int from;
        while (true) {
            int done = readAheadUpTo.get();
            from = Math.max(lastIndex + 1, done + 1);
            if (from > to || readAheadUpTo.compareAndSet(done, to)) {
                break;
            }
        }
        for (int index = from; index <= to && !closed; index++) {
            String hex = manifest.chunks().get(index);
            CompletableFuture<Void> f = fetcher.prefetch(manifest.digest(), hex, stats, sbStats);
            if (!f.isDone()) {
                readAheads.add(f);
                f.whenComplete((v, e) -> readAheads.remove(f));
            }
        }
    }

    /** Completes when the read-ahead fetches started so far have finished (for tests). */
    CompletableFuture<Void> readAheadIdle() {
        return CompletableFuture.allOf(readAheads.toArray(CompletableFuture[]::new)).handle((v, e) -> null);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Prefetcher p : prefetchers) {
            p.close();
        }
    }
}
