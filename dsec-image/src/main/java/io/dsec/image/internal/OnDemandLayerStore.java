package io.dsec.image.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.DsecException;
import io.dsec.ImageFetchException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.FetchStats;
import io.dsec.image.LayerManifest;
import io.dsec.image.LoadMode;
import io.dsec.image.OnDemandImages;
import io.dsec.image.SandboxFetchStats;
import io.dsec.image.internal.cache.AccessRecorder;
import io.dsec.image.internal.cache.AccessTrace;
import io.dsec.image.internal.cache.ChunkCache;
import io.dsec.image.internal.cache.ChunkFetcher;
import io.dsec.image.internal.cache.LayerFetchStats;
import io.dsec.image.internal.cache.OnDemandLayerReader;
import io.dsec.image.internal.cache.Prefetcher;
import io.dsec.image.internal.cache.SandboxAttribution;
import io.dsec.image.internal.chunk.Chunker;
import io.dsec.image.internal.chunk.LayerPusher;
import io.dsec.image.internal.fuse.FuseFile;
import io.dsec.image.internal.fuse.FuseServer;
import io.dsec.spi.LayerStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LayerStore} whose layers live in a {@link BlobStore} as chunks and a manifest. Pushing cuts an image into
 * chunks and uploads the missing ones; mounting serves the image as a FUSE file whose reads fetch, verify and cache
 * chunks. The host keeps manifests, a chunk cache and, under {@code <stateDir>/image}, the FUSE mount.
 */
public final class OnDemandLayerStore implements LayerStore {
    private static final Logger LOG = LoggerFactory.getLogger(OnDemandLayerStore.class);
    private static final int PREFETCH_PARALLELISM = 4;

    private final OnDemandImages.Settings settings;
    private final BlobStore store;
    private final Path root;
    private final Path staging;
    private final Path mountpoint;
    private final Path fuseState;
    private final Path servedFile;
    private final ObjectMapper mapper = new ObjectMapper();
    private final ChunkCache cache;
    private final ChunkFetcher fetcher;
    private final Chunker chunker;
    private final ExecutorService checks;
    private final ScheduledExecutorService traceSaver;
    private final Map<String, Served> served = new ConcurrentHashMap<>();
    private final Map<String, LayerFetchStats> finished = new ConcurrentHashMap<>();
    private final Map<String, LayerManifest> checkedManifests = new ConcurrentHashMap<>();
    private final SandboxAttribution sandboxes = SandboxAttribution.fromProc();
    private final Object fuseLock = new Object();
    private FuseServer fuse;
    private volatile boolean closed;

    /** A layer being served: its reader and what runs beside it (either may be null). */
    private record Served(OnDemandLayerReader reader, Prefetcher prefetcher, AccessRecorder recorder) {
    }

    /** The JSON kept under {@code refs/<kind>/<name>/<version>.json}. */
    record Ref(String kind, String name, String version, String digest, long sizeBytes) {
        Layer toLayer() {
            return new Layer(LayerKind.valueOf(kind), name, version, digest, sizeBytes);
        }
    }

    private OnDemandLayerStore(Path stateDir, OnDemandImages.Settings settings) {
        this.settings = settings;
        this.store = settings.store();
        this.root = stateDir.toAbsolutePath().normalize().resolve("image");
        this.staging = root.resolve("staging");
        this.mountpoint = root.resolve("fuse");
        this.fuseState = root.resolve("fuse-state");
        this.servedFile = root.resolve("served.json");
        try {
            Files.createDirectories(staging);
            Files.createDirectories(mountpoint);
            Files.createDirectories(fuseState);
        } catch (IOException e) {
            throw new DsecException("cannot create " + root + ": " + e.getMessage() + "; check that the state directory is writable", e);
        }
        this.cache = new ChunkCache(root.resolve("cache"), settings.cacheBudgetBytes());
        this.fetcher = new ChunkFetcher(store, cache, new ChunkFetcher.Config(settings.fetchConcurrency(),
            Math.max(1, settings.fetchConcurrency() / 4), settings.fetchTimeout()));
        this.chunker = new Chunker(settings.chunkSize());
        AtomicInteger n = new AtomicInteger();
        this.checks = Executors.newFixedThreadPool(Math.min(16, settings.fetchConcurrency()), r -> daemon(r, "dsec-image-check-" + n.incrementAndGet()));
        this.traceSaver = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "dsec-image-traces"));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Opens the store; if a JVM that died left the FUSE mount serving sandboxes, takes it over. */
    public static OnDemandLayerStore open(Path stateDir, OnDemandImages.Settings settings) {
        OnDemandLayerStore s = new OnDemandLayerStore(stateDir, settings);
        try {
            s.takeOverOrClean();
            return s;
        } catch (RuntimeException e) {
            try {
                s.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private void takeOverOrClean() {
        List<String> digests = readServed();
        if (isFuseMounted() && !digests.isEmpty()) {
            Map<String, FuseFile> files = new LinkedHashMap<>();
            for (String digest : digests) {
                Served s = startServing(manifest(digest), false);
                served.put(digest, s);
                files.put(fileName(digest), s.reader());
            }
            fuse = FuseServer.reattach(mountpoint, fuseState, settings.fuseThreads(), files);
            LOG.info("took over the FUSE mount {} from a previous JVM, serving {} layer(s)", mountpoint, files.size());
            return;
        }
        FuseServer.destroyStale(mountpoint, fuseState);
        writeServed();
    }

    private FuseServer fuse() {
        synchronized (fuseLock) {
            if (fuse == null) {
                fuse = FuseServer.mount(mountpoint, fuseState, settings.fuseThreads());
            }
            return fuse;
        }
    }

    @Override
    public Path stagingDirectory() {
        return staging;
    }

    @Override
    public Layer put(LayerKind kind, String name, String version, BuiltImage image) {
        ensureOpen();
        if (!store.writable()) {
            throw new DsecException("cannot push " + kind + " " + name + ":" + version + " to " + store.describe()
                + ": it is read-only; push through a directory or S3 store and read through this one");
        }
        try {
            LayerManifest manifest = chunker.chunk(image, kind, name, version);
            try (LayerPusher pusher = new LayerPusher(store, settings.pushConcurrency())) {
                LayerPusher.PushStats stats = pusher.push(image.file(), manifest, LayerPusher.ProgressListener.NONE);
                LOG.debug("pushed {} {}:{}: {} chunks, {} uploaded, {} present already", kind, name, version, stats.chunksTotal(),
                    stats.chunksUploaded(), stats.chunksSkipped());
            }
            Ref ref = new Ref(kind.name(), name, version, image.digest(), image.sizeBytes());
            store.put(LayerManifest.refKey(kind, name, version), mapper.writeValueAsBytes(ref));
            return ref.toLayer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            try {
                Files.deleteIfExists(image.file());
            } catch (IOException e) {
                LOG.warn("could not delete the staged image {}: {}", image.file(), e.getMessage());
            }
        }
    }

    @Override
    public boolean contains(String digest) {
        return store.exists(LayerManifest.manifestKey(digest));
    }

    @Override
    public Optional<Layer> get(String digest) {
        try {
            LayerManifest m = manifest(digest);
            return Optional.of(new Layer(m.kind(), m.name(), m.version(), m.digest(), m.sizeBytes()));
        } catch (BlobNotFoundException e) {
            return Optional.empty();
        }
    }

    @Override
    public Optional<Layer> find(LayerKind kind, String name, String version) {
        try {
            return Optional.of(readRef(LayerManifest.refKey(kind, name, version)));
        } catch (BlobNotFoundException e) {
            return Optional.empty();
        }
    }

    @Override
    public List<Layer> list() {
        List<Layer> layers = new ArrayList<>();
        for (String key : store.list("refs/")) {
            layers.add(readRef(key));
        }
        layers.sort(Comparator.comparing((Layer l) -> l.kind()).thenComparing(Layer::name).thenComparing(Layer::version));
        return layers;
    }

    @Override
    public void deleteReference(LayerKind kind, String name, String version) {
        ensureOpen();
        store.delete(LayerManifest.refKey(kind, name, version));
    }

    /** Documents are blobs of the blob store under their key, so every host on the store sees them. */
    @Override
    public void putDocument(String key, byte[] content) {
        ensureOpen();
        LayerStore.checkDocumentKey(key);
        if (!store.writable()) {
            throw new DsecException("cannot store " + key + " in " + store.describe() + ": it is read-only");
        }
        store.put(key, content);
    }

    @Override
    public Optional<byte[]> getDocument(String key) {
        LayerStore.checkDocumentKey(key);
        try {
            return Optional.of(store.get(key));
        } catch (BlobNotFoundException e) {
            return Optional.empty();
        }
    }

    @Override
    public List<String> listDocuments(String prefix) {
        return store.list(prefix);
    }

    @Override
    public void deleteDocument(String key) {
        LayerStore.checkDocumentKey(key);
        store.delete(key);
    }

    private Layer readRef(String key) {
        byte[] json = store.get(key);
        try {
            return mapper.readValue(json, Ref.class).toLayer();
        } catch (IOException | RuntimeException e) {
            throw new ImageFetchException("reference " + key + " in " + store.describe() + " is not valid JSON of a layer reference ("
                + e.getMessage() + "); push the layer again", e);
        }
    }

    @Override
    public Path mountSource(Layer layer) {
        ensureOpen();
        String digest = layer.digest();
        Served existing = served.get(digest);
        if (existing != null) {
            return fuse().pathOf(fileName(digest));
        }
        synchronized (servingLock(digest)) {
            existing = served.get(digest);
            if (existing == null) {
                LayerManifest manifest = checkedManifest(digest);
                Served s = startServing(manifest, true);
                try {
                    fuse().add(fileName(digest), s.reader());
                } catch (RuntimeException e) {
                    stopServing(digest, s);
                    throw e;
                }
                served.put(digest, s);
                writeServed();
            }
        }
        return fuse().pathOf(fileName(digest));
    }

    private final Map<String, Object> servingLocks = new ConcurrentHashMap<>();

    private Object servingLock(String digest) {
        return servingLocks.computeIfAbsent(digest, d -> new Object());
    }

    /** Makes the reader of a layer and, for a new mount, pulls, prefetches or records as the settings say. */
    private Served startServing(LayerManifest manifest, boolean newMount) {
        OnDemandLayerReader reader = new OnDemandLayerReader(manifest, cache, fetcher,
            new OnDemandLayerReader.Config(settings.readAheadChunks(), settings.fetchTimeout().multipliedBy(2)), sandboxes);
        if (!newMount) {
            return new Served(reader, null, null);
        }
        try {
            if (settings.mode() == LoadMode.FULL_PULL) {
                fetcher.pullAll(manifest, reader.statsCollector());
                return new Served(reader, null, null);
            }
            Optional<AccessTrace> trace = settings.prefetch() ? readTrace(manifest.digest()) : Optional.empty();
            if (trace.isPresent()) {
                return new Served(reader, reader.prefetch(trace.get(), PREFETCH_PARALLELISM), null);
            }
            if (!settings.recordWindow().isZero() && store.writable()) {
                AccessRecorder recorder = new AccessRecorder(manifest.digest(), settings.recordWindow(), settings.clock());
                reader.record(recorder);
                traceSaver.schedule(() -> saveTrace(manifest.digest(), recorder), settings.recordWindow().toMillis(), TimeUnit.MILLISECONDS);
                return new Served(reader, null, recorder);
            }
            return new Served(reader, null, null);
        } catch (RuntimeException e) {
            reader.close();
            throw e;
        }
    }

    private Optional<AccessTrace> readTrace(String digest) {
        try {
            return Optional.of(AccessTrace.fromJson(store.get(LayerManifest.traceKey(digest))));
        } catch (BlobNotFoundException e) {
            return Optional.empty();
        } catch (RuntimeException e) {
            LOG.warn("ignoring the access trace of {} in {}: {}", digest, store.describe(), e.getMessage());
            return Optional.empty();
        }
    }

    private void saveTrace(String digest, AccessRecorder recorder) {
        recorder.stop();
        AccessTrace trace = recorder.toTrace();
        if (trace.chunks().isEmpty() || closed) {
            return;
        }
        try {
            if (!store.exists(LayerManifest.traceKey(digest))) {
                store.put(LayerManifest.traceKey(digest), trace.toJson());
                LOG.info("recorded the first {} chunks read of {} for later sandboxes to prefetch", trace.chunks().size(), digest);
            }
        } catch (RuntimeException e) {
            LOG.warn("could not store the access trace of {} in {}: {}", digest, store.describe(), e.getMessage());
        }
    }

    /** The manifest of a digest, parsed, with every chunk it names checked to exist in the store (once per host). */
    private LayerManifest checkedManifest(String digest) {
        LayerManifest known = checkedManifests.get(digest);
        if (known != null) {
            return known;
        }
        LayerManifest manifest = manifest(digest);
        if (settings.mode() == LoadMode.ON_DEMAND) {
            List<CompletableFuture<String>> missing = new ArrayList<>();
            for (String chunk : manifest.chunks().stream().distinct().toList()) {
                missing.add(CompletableFuture.supplyAsync(() -> store.exists(LayerManifest.chunkKey(chunk)) ? null : chunk, checks));
            }
            List<String> absent = new ArrayList<>();
            for (CompletableFuture<String> f : missing) {
                String chunk = joinUnwrapped(f);
                if (chunk != null) {
                    absent.add(chunk);
                }
            }
            if (!absent.isEmpty()) {
                throw new ImageFetchException("layer " + manifest.name() + ":" + manifest.version() + " (" + digest + ") names "
                    + absent.size() + " chunk(s) that " + store.describe() + " lacks, first " + absent.get(0)
                    + "; push the layer again before mounting it");
            }
        }
        checkedManifests.put(digest, manifest);
        return manifest;
    }

    private static <T> T joinUnwrapped(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
    }

    private LayerManifest manifest(String digest) {
        String key = LayerManifest.manifestKey(digest);
        LayerManifest m = LayerManifest.parse(store.get(key), key + " in " + store.describe());
        if (!m.digest().equals(digest)) {
            throw new ImageFetchException("manifest " + key + " in " + store.describe() + " describes " + m.digest() + ", not " + digest
                + "; push the layer again");
        }
        return m;
    }

    @Override
    public void released(Layer layer) {
        String digest = layer.digest();
        synchronized (servingLock(digest)) {
            Served s = served.remove(digest);
            if (s == null) {
                return;
            }
            FuseServer server;
            synchronized (fuseLock) {
                server = fuse;
            }
            if (server != null) {
                server.remove(fileName(digest));
            }
            stopServing(digest, s);
            writeServed();
        }
    }

    private void stopServing(String digest, Served s) {
        if (s.recorder() != null) {
            saveTrace(digest, s.recorder());
        }
        if (s.prefetcher() != null) {
            s.prefetcher().close();
        }
        finished.put(digest, s.reader().stats());
        s.reader().close();
    }

    public Optional<FetchStats> stats(String digest) {
        Served s = served.get(digest);
        LayerFetchStats st = s != null ? s.reader().stats() : finished.get(digest);
        if (st == null) {
            return Optional.empty();
        }
        return Optional.of(new FetchStats(st.digest(), st.imageBytes(), st.bytesFetched(), st.chunkHits(), st.chunkMisses(), st.fetches(),
            st.verificationFailures(), st.failedReads(), st.prefetchedChunks(), st.fetchLatencyP50Micros(), st.fetchLatencyP99Micros()));
    }

    /** What the reads of the sandbox {@code sandboxId} have cost; empty when none reached this host's FUSE server. */
    public Optional<SandboxFetchStats> sandboxStats(String sandboxId) {
        return sandboxes.stats(sandboxId);
    }

    public OnDemandImages.CacheStats cacheStats() {
        return new OnDemandImages.CacheStats(cache.usedBytes(), cache.budgetBytes(), cache.chunkCount(), cache.evictions());
    }

    private static String fileName(String digest) {
        return digest.substring("sha256:".length()) + ".erofs";
    }

    private boolean isFuseMounted() {
        try {
            String mp = mountpoint.toRealPath().toString();
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                int dash = line.indexOf(" - ");
                if (f.length > 4 && f[4].equals(mp) && dash > 0 && line.substring(dash + 3).startsWith("fuse")) {
                    return true;
                }
            }
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private List<String> readServed() {
        try {
            if (!Files.exists(servedFile)) {
                return List.of();
            }
            return List.of(mapper.readValue(servedFile.toFile(), String[].class));
        } catch (IOException e) {
            LOG.warn("ignoring unreadable {}: {}", servedFile, e.getMessage());
            return List.of();
        }
    }

    /** Records which layers are served, so a JVM that takes over after a crash serves them again. */
    private synchronized void writeServed() {
        try {
            Path tmp = Files.createTempFile(root, ".served", ".tmp");
            mapper.writeValue(tmp.toFile(), served.keySet().stream().sorted().toArray(String[]::new));
            Files.move(tmp, servedFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("recording served layers in " + servedFile, e);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new DsecException("this on-demand layer store is closed");
        }
    }

    /** Stops serving: unmounts the FUSE file system, stops the holder, closes fetches and the cache. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException first = null;
        List<Runnable> steps = new ArrayList<>();
        steps.add(traceSaver::shutdownNow);
        for (Map.Entry<String, Served> e : served.entrySet()) {
            steps.add(() -> stopServing(e.getKey(), e.getValue()));
        }
        steps.add(() -> {
            synchronized (fuseLock) {
                if (fuse != null) {
                    fuse.close();
                }
            }
        });
        steps.add(() -> {
            served.clear();
            writeServed();
        });
        steps.add(fetcher::close);
        steps.add(checks::shutdownNow);
        steps.add(cache::close);
        for (Runnable step : steps) {
            try {
                step.run();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
