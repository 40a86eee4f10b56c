package io.dsec.image.internal.chunk;

import io.dsec.DsecException;
import io.dsec.ImageFetchException;
import io.dsec.InvalidSpecException;
import io.dsec.LayerBuildException;
import io.dsec.image.BlobStore;
import io.dsec.image.LayerManifest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pushes layer images to a {@link BlobStore}: uploads the chunks the store lacks, several at a time, then the manifest.
 * The manifest goes last, after every chunk is stored, so a reader that finds a manifest finds its chunks too.
 *
 * <p>Safe for concurrent use; each push bounds its own concurrency. Close it to stop the executor it created (an
 * executor given to it is left alone).
 */
public final class LayerPusher implements AutoCloseable {
    /** Chunks in flight per push unless set: uploads are network-bound, not CPU-bound. */
    public static final int DEFAULT_CONCURRENCY = 8;
    /** Pushes larger than this log an info line every ~10%. */
    static final long LOG_PROGRESS_ABOVE = 64L * 1024 * 1024;
    private static final Logger LOG = LoggerFactory.getLogger(LayerPusher.class);

    private final BlobStore store;
    private final Executor executor;
    private final ExecutorService ownExecutor;
    private final int concurrency;

    /** What a push has done so far; given to a {@link ProgressListener} after each chunk. */
    public record Progress(long bytesDone, long bytesTotal, int chunksUploaded, int chunksSkipped, int chunksToCheck) {
    }

    /**
     * Called after each unique chunk is stored or found present, from the pushing threads, one call at a time and with
     * growing numbers. Must be quick and must not throw.
     */
    @FunctionalInterface
    public interface ProgressListener {
        ProgressListener NONE = p -> {
        };

        void progress(Progress progress);
    }

    /**
     * What a push did.
     *
     * @param digest          the image digest
     * @param chunksTotal     chunks in the manifest
     * @param chunksUnique    distinct chunks among them (an image may repeat a chunk, e.g. zeros)
     * @param chunksUploaded  distinct chunks uploaded
     * @param chunksSkipped   distinct chunks the store had already (dedup across pushes and layers)
     * @param bytesUploaded   chunk bytes uploaded
     * @param bytesTotal      image size
     * @param manifestWritten false when the store had this digest's manifest already and it was left alone
     * @param elapsed         wall time of the push
     */
    public record PushStats(String digest, int chunksTotal, int chunksUnique, int chunksUploaded, int chunksSkipped,
                            long bytesUploaded, long bytesTotal, boolean manifestWritten, Duration elapsed) {
    }

    /** Pushes with its own pool of {@link #DEFAULT_CONCURRENCY} threads. */
    public LayerPusher(BlobStore store) {
        this(store, DEFAULT_CONCURRENCY);
    }

    /** Pushes with its own pool of {@code concurrency} threads. */
    public LayerPusher(BlobStore store, int concurrency) {
        this(store, null, concurrency);
    }

    /**
     * @param executor    runs the uploads; null to create a pool of {@code concurrency} daemon threads, closed by
     *                    {@link #close()}
     * @param concurrency chunks in flight per push, 1-64
     */
    public LayerPusher(BlobStore store, Executor executor, int concurrency) {
        if (store == null) {
            throw new InvalidSpecException("store", null, "give the BlobStore to push to");
        }
        if (!store.writable()) {
            throw new InvalidSpecException("store", store.describe(), "the store is read-only; push through a directory or S3 store");
        }
        if (concurrency < 1 || concurrency > 64) {
            throw new InvalidSpecException("concurrency", concurrency, "use 1 to 64 chunks in flight, e.g. " + DEFAULT_CONCURRENCY);
        }
        this.store = store;
        this.concurrency = concurrency;
        if (executor == null) {
            AtomicInteger n = new AtomicInteger();
            this.ownExecutor = Executors.newFixedThreadPool(concurrency, r -> {
                Thread t = new Thread(r, "dsec-push-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            this.executor = ownExecutor;
        } else {
            this.ownExecutor = null;
            this.executor = executor;
        }
    }

    /** Cuts {@code image} with {@code chunker} and pushes it. */
    public PushStats push(Path image, Chunker chunker, io.dsec.LayerKind kind, String name, String version,
                          ProgressListener listener) {
        return push(image, chunker.chunk(image, kind, name, version), listener);
    }

    /**
     * Pushes the chunks of {@code image} the store lacks, then {@code manifest} (unless the store has this digest's
     * manifest already). Each chunk is read again from the file and checked against its name before upload.
     *
     * @param manifest what {@link Chunker#chunk} returned for {@code image}
     * @throws LayerBuildException    when the file no longer matches the manifest
     * @throws ImageFetchException    when the store fails; chunks stored so far stay (they are valid content) and a
     *                                later push skips them, but no manifest is written
     */
    public PushStats push(Path image, LayerManifest manifest, ProgressListener listener) {
        long started = System.nanoTime();
        ProgressListener progressListener = listener == null ? ProgressListener.NONE : listener;
        Map<String, List<Integer>> byChunk = new LinkedHashMap<>();
        for (int i = 0; i < manifest.chunkCount(); i++) {
            byChunk.computeIfAbsent(manifest.chunks().get(i), k -> new ArrayList<>(1)).add(i);
        }
        Tracker tracker = new Tracker(manifest, byChunk.size(), progressListener);
        try (FileChannel file = FileChannel.open(image, StandardOpenOption.READ)) {
            if (file.size() != manifest.sizeBytes()) {
                throw new LayerBuildException("image " + image + " has " + file.size() + " bytes but its manifest says "
                    + manifest.sizeBytes() + "; it changed after chunking: chunk it again");
            }
            uploadChunks(image, file, manifest, byChunk, tracker);
        } catch (IOException e) {
            throw new LayerBuildException("cannot read image " + image + " to push it to " + store.describe() + ": " + e, e);
        }
        String manifestKey = LayerManifest.manifestKey(manifest.digest());
        boolean written = false;
        if (!sameManifestStored(manifestKey, manifest)) {
            store.put(manifestKey, manifest.toJson());
            written = true;
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
        PushStats stats = new PushStats(manifest.digest(), manifest.chunkCount(), byChunk.size(), tracker.uploaded.get(),
            tracker.skipped.get(), tracker.bytesUploaded(), manifest.sizeBytes(), written, elapsed);
        if (manifest.sizeBytes() > LOG_PROGRESS_ABOVE) {
            LOG.info("pushed {} ({} MiB) to {} in {} ms: {} chunks, {} uploaded ({} MiB), {} already there, {} repeated in the image",
                manifest.digest(), manifest.sizeBytes() >> 20, store.describe(), elapsed.toMillis(), stats.chunksTotal(),
                stats.chunksUploaded(), stats.bytesUploaded() >> 20, stats.chunksSkipped(),
                stats.chunksTotal() - stats.chunksUnique());
        }
        return stats;
    }

    private void uploadChunks(Path image, FileChannel file, LayerManifest manifest, Map<String, List<Integer>> byChunk,
                              Tracker tracker) {
        Semaphore permits = new Semaphore(concurrency);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<CompletableFuture<Void>> inFlight = new ArrayList<>(byChunk.size());
        try {
            for (Map.Entry<String, List<Integer>> e : byChunk.entrySet()) {
                if (failure.get() != null) {
                    break;
                }
                permits.acquire();
                Runnable task = () -> {
                    try {
                        if (failure.get() == null) {
                            pushChunk(image, file, manifest, e.getKey(), e.getValue(), tracker);
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    } finally {
                        permits.release();
                    }
                };
                try {
                    inFlight.add(CompletableFuture.runAsync(task, executor));
                } catch (RejectedExecutionException rejected) {
                    permits.release();
                    failure.compareAndSet(null, new DsecException("the push executor refused work (" + rejected.getMessage()
                        + "); it was shut down: use an open executor", rejected));
                }
            }
            // Wait for what is in flight, also after a failure, so no upload outlives the push.
            CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new)).join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure.compareAndSet(null, e);
            inFlight.forEach(f -> f.cancel(false));
        } catch (CompletionException e) {
            failure.compareAndSet(null, e.getCause());
        }
        Throwable t = failure.get();
        if (t != null) {
            if (t instanceof InterruptedException) {
                throw new ImageFetchException("interrupted while pushing " + manifest.digest() + " to " + store.describe()
                    + "; no manifest was written, push again", t);
            }
            if (t instanceof DsecException d) {
                throw d;
            }
            if (t instanceof RuntimeException r) {
                throw new ImageFetchException("cannot push " + manifest.digest() + " to " + store.describe() + ": " + r
                    + "; no manifest was written, push again", r);
            }
            if (t instanceof Error err) {
                throw err;
            }
            throw new ImageFetchException("cannot push " + manifest.digest() + " to " + store.describe() + ": " + t, t);
        }
    }

    private void pushChunk(Path image, FileChannel file, LayerManifest manifest, String hex, List<Integer> indexes,
                           Tracker tracker) throws IOException {
        String key = LayerManifest.chunkKey(hex);
        int first = indexes.get(0);
        long bytes = 0;
        for (int i : indexes) {
            bytes += manifest.chunkLength(i);
        }
        if (store.exists(key)) {
            tracker.done(bytes, 0, false);
            return;
        }
        int length = manifest.chunkLength(first);
        ByteBuffer buf = ByteBuffer.allocate(length);
        long pos = manifest.chunkOffset(first);
        while (buf.hasRemaining()) {
            int r = file.read(buf, pos);
            if (r < 0) {
                break;
            }
            pos += r;
        }
        MessageDigest sha = Chunker.sha256();
        sha.update(buf.array(), 0, buf.position());
        String actual = HexFormat.of().formatHex(sha.digest());
        if (!actual.equals(hex)) {
            throw new LayerBuildException("image " + image + " changed after chunking: chunk " + first + " at offset "
                + manifest.chunkOffset(first) + " is now sha256 " + actual + ", the manifest says " + hex
                + "; do not modify an image while it is pushed, chunk it again");
        }
        store.put(key, buf.array());
        tracker.done(bytes, length, true);
    }

    private boolean sameManifestStored(String key, LayerManifest manifest) {
        if (!store.exists(key)) {
            return false;
        }
        try {
            LayerManifest stored = LayerManifest.parse(store.get(key), key + " in " + store.describe());
            return stored.chunks().equals(manifest.chunks()) && stored.sizeBytes() == manifest.sizeBytes()
                && stored.chunkSize() == manifest.chunkSize();
        } catch (ImageFetchException damagedOrGone) {
            return false; // replace a damaged manifest
        }
    }

    @Override
    public void close() {
        if (ownExecutor != null) {
            ownExecutor.shutdown();
        }
    }

    /** Counts and reports progress; serialises the listener and the log lines. */
    private static final class Tracker {
        final AtomicInteger uploaded = new AtomicInteger();
        final AtomicInteger skipped = new AtomicInteger();
        private final LayerManifest manifest;
        private final int unique;
        private final ProgressListener listener;
        private long bytesDone;
        private long bytesUploaded;
        private int lastLoggedDecile;

        Tracker(LayerManifest manifest, int unique, ProgressListener listener) {
            this.manifest = manifest;
            this.unique = unique;
            this.listener = listener;
        }

        synchronized void done(long bytes, long uploadedBytes, boolean upload) {
            (upload ? uploaded : skipped).incrementAndGet();
            bytesDone += bytes;
            bytesUploaded += uploadedBytes;
            long total = manifest.sizeBytes();
            try {
                listener.progress(new Progress(bytesDone, total, uploaded.get(), skipped.get(), unique));
            } catch (RuntimeException e) {
                LOG.warn("push progress listener failed; ignoring it", e);
            }
            if (total > LOG_PROGRESS_ABOVE) {
                int decile = (int) (bytesDone * 10 / total);
                if (decile > lastLoggedDecile && decile < 10) {
                    lastLoggedDecile = decile;
                    LOG.info("pushing {}: {}% ({} of {} MiB; {} chunks uploaded, {} already there)", manifest.digest(),
                        decile * 10, bytesDone >> 20, total >> 20, uploaded.get(), skipped.get());
                }
            }
        }

        synchronized long bytesUploaded() {
            return bytesUploaded;
        }
    }
}
