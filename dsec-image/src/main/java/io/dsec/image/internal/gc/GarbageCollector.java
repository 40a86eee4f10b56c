package io.dsec.image.internal.gc;

import io.dsec.DsecException;
import io.dsec.image.BlobStore;
import io.dsec.image.LayerManifest;
import io.dsec.image.StoreGc;
import io.dsec.image.internal.gc.StoreReader.Manifest;
import io.dsec.image.internal.gc.StoreReader.Roots;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of the store GC described in {@link StoreGc}: mark, record candidates, mark again, sweep.
 *
 * <ol>
 *   <li>Mark: read the roots (refs, snapshot records) and every manifest; reachable = manifests of roots and their chunks.</li>
 *   <li>Candidates: unreachable manifests and traces, and chunks no reachable manifest lists, each with the time a run
 *       first saw it (from the previous state, else now). Eligible: first seen at least {@code grace} ago.</li>
 *   <li>Mark again right before the sweep. Delete an eligible manifest or trace only if no root names its layer now,
 *       and an eligible chunk only if no manifest left in the store lists it (reachable or not: an unreferenced
 *       manifest may be a push that has not yet written its reference).</li>
 *   <li>Write the new candidates (without what is about to be deleted, so a blob deleted and pushed again never
 *       inherits an old first-seen time), then delete: manifests, traces, then chunks in batches, listing manifests
 *       again before each batch to spare the chunks of new ones.</li>
 * </ol>
 */
public final class GarbageCollector {
    private static final Logger LOG = LoggerFactory.getLogger(GarbageCollector.class);
    static final int DEFAULT_BATCH = 256;
    private static final int MAX_DELETE_FAILURES = 20;
    private static final int MAX_ERRORS_OF_A_KIND = 20;

    private final BlobStore store;
    private final Duration grace;
    private final Clock clock;
    private final boolean dryRun;
    /** Chunk deletions between two listings of the manifests. */
    int batchSize = DEFAULT_BATCH;
    /** Test hook: runs after the first mark, before the second. */
    Runnable afterMark = () -> {
    };
    /** Test hook: runs before each batch of chunk deletions, before the manifests are listed again. */
    Runnable beforeChunkBatch = () -> {
    };

    public GarbageCollector(BlobStore store, Duration grace, Clock clock, boolean dryRun) {
        this.store = store;
        this.grace = grace;
        this.clock = clock;
        this.dryRun = dryRun;
    }

    public StoreGc.Result run() {
        if (!store.writable()) {
            throw new DsecException("store GC needs a store it can list and delete from (a directory or S3 store); "
                + store.describe() + " is read-only: run the GC against the directory or bucket it serves");
        }
        long started = System.nanoTime();
        GcLock lock = dryRun ? null : GcLock.acquire(store, clock);
        try {
            return collect(lock, started);
        } finally {
            if (lock != null) {
                lock.release();
            }
        }
    }

    private StoreGc.Result collect(GcLock lock, long startedNanos) {
        Instant startedAt = clock.instant();
        List<String> errors = new ArrayList<>();
        StoreReader reader = new StoreReader(store);

        // 1. mark
        CandidateState previous;
        Roots roots;
        Map<String, Manifest> manifests;
        List<String> chunks;
        List<String> traces;
        try {
            previous = CandidateState.read(store, errors);
            roots = reader.readRoots();
            manifests = new TreeMap<>(reader.refreshManifests());
            chunks = reader.listHexes(StoreReader.CHUNKS, StoreReader.CHUNK_KEY);
            traces = reader.listHexes(StoreReader.TRACES, StoreReader.TRACE_KEY);
        } catch (DsecException e) {
            throw stop("before deleting anything", e);
        }
        Instant seenAt = clock.instant();
        Set<String> live = new HashSet<>();
        int reachable = 0;
        int dangling = 0;
        for (Map.Entry<String, String> root : roots.hexes().entrySet()) {
            Manifest m = manifests.get(root.getKey());
            if (m == null) {
                if (dangling++ < MAX_ERRORS_OF_A_KIND) {
                    errors.add(root.getValue() + " names layer sha256:" + root.getKey() + ", whose manifest is not in the store; "
                        + "push that layer again or delete " + root.getValue());
                }
                continue;
            }
            reachable++;
            live.addAll(m.manifest().chunks());
        }
        summarise(errors, dangling, "roots name layers whose manifest is missing");
        Set<String> chunkSet = new HashSet<>(chunks);
        int missing = 0;
        for (String hex : live) {
            if (!chunkSet.contains(hex) && missing++ < MAX_ERRORS_OF_A_KIND) {
                errors.add("reachable chunk " + LayerManifest.chunkKey(hex) + " is missing from the store; push the layers "
                    + "that list it again");
            }
        }
        summarise(errors, missing, "reachable chunks are missing");

        // 2. candidates
        Map<String, Instant> candidates = new TreeMap<>();
        for (String hex : manifests.keySet()) {
            if (!roots.contains(hex)) {
                candidates.put(LayerManifest.manifestKey(hex), firstSeen(previous, LayerManifest.manifestKey(hex), seenAt));
            }
        }
        for (String hex : traces) {
            if (!roots.contains(hex)) {
                candidates.put(LayerManifest.traceKey(hex), firstSeen(previous, LayerManifest.traceKey(hex), seenAt));
            }
        }
        for (String hex : chunks) {
            if (!live.contains(hex)) {
                candidates.put(LayerManifest.chunkKey(hex), firstSeen(previous, LayerManifest.chunkKey(hex), seenAt));
            }
        }
        int newCandidates = (int) candidates.keySet().stream().filter(k -> !previous.candidates().containsKey(k)).count();
        Instant now = clock.instant();
        Set<String> eligible = new TreeSet<>();
        for (String key : candidates.keySet()) {
            Instant first = previous.candidates().get(key);
            if (first != null && !first.plus(grace).isAfter(now)) {
                eligible.add(key);
            }
        }

        // 3. mark again, right before the sweep
        afterMark.run();
        Roots roots2;
        Map<String, Manifest> manifests2;
        try {
            roots2 = reader.readRoots();
            manifests2 = new TreeMap<>(reader.refreshManifests());
        } catch (DsecException e) {
            throw stop("before deleting anything", e);
        }
        Set<String> live2 = new HashSet<>();
        for (String hex : roots2.hexes().keySet()) {
            Manifest m = manifests2.get(hex);
            if (m != null) {
                live2.addAll(m.manifest().chunks());
            }
        }
        List<Manifest> deleteManifests = new ArrayList<>();
        List<String> deleteTraces = new ArrayList<>();
        for (String key : eligible) {
            Matcher mm = StoreReader.MANIFEST_KEY.matcher(key);
            Matcher tm = StoreReader.TRACE_KEY.matcher(key);
            if (mm.matches() && !roots2.contains(mm.group(1)) && manifests2.containsKey(mm.group(1))) {
                deleteManifests.add(manifests2.get(mm.group(1)));
            } else if (tm.matches() && !roots2.contains(tm.group(1))) {
                deleteTraces.add(key);
            }
        }
        Set<String> deletedManifestHexes = new HashSet<>();
        deleteManifests.forEach(m -> deletedManifestHexes.add(m.hex()));
        Set<String> protectedChunks = new HashSet<>();
        Set<String> keptManifestKeys = new HashSet<>();
        for (Manifest m : manifests2.values()) {
            if (!deletedManifestHexes.contains(m.hex())) {
                protectedChunks.addAll(m.manifest().chunks());
                keptManifestKeys.add(m.key());
            }
        }
        List<String> deleteChunks = new ArrayList<>();
        for (String key : eligible) {
            Matcher cm = StoreReader.CHUNK_KEY.matcher(key);
            if (cm.matches() && !protectedChunks.contains(cm.group(1))) {
                deleteChunks.add(cm.group(1));
            }
        }
        Map<String, Long> chunkSizes = chunkSizes(manifests.values(), manifests2.values(), new HashSet<>(deleteChunks));

        Set<String> aboutToGo = new HashSet<>(deleteTraces);
        deleteManifests.forEach(m -> aboutToGo.add(m.key()));
        deleteChunks.forEach(h -> aboutToGo.add(LayerManifest.chunkKey(h)));
        // what the next run starts from: still unreferenced, not about to be deleted
        Map<String, Instant> next = new TreeMap<>();
        for (Map.Entry<String, Instant> c : candidates.entrySet()) {
            String key = c.getKey();
            String hex = hexOfKey(key);
            boolean referencedNow = key.startsWith(StoreReader.CHUNKS) ? live2.contains(hex) : roots2.contains(hex);
            boolean gone = key.startsWith(StoreReader.LAYERS) && !manifests2.containsKey(hex);
            if (!referencedNow && !gone && !aboutToGo.contains(key)) {
                next.put(key, c.getValue());
            }
        }

        Sweep sweep = new Sweep(errors);
        if (dryRun) {
            deleteManifests.forEach(m -> sweep.counted(m.key(), m.json().length));
            deleteTraces.forEach(k -> sweep.counted(k, -1));
            deleteChunks.forEach(h -> sweep.counted(LayerManifest.chunkKey(h), chunkSizes.getOrDefault(h, -1L)));
            sweep.manifests = deleteManifests.size();
            sweep.traces = deleteTraces.size();
            sweep.chunks = deleteChunks.size();
        } else {
            try {
                lock.renew("writing " + StoreGc.CANDIDATES_KEY);
                store.put(StoreGc.CANDIDATES_KEY, new CandidateState(seenAt, next).toJson());
            } catch (DsecException e) {
                throw stop("before deleting anything", e);
            }
            sweep(lock, reader, sweep, deleteManifests, deleteTraces, deleteChunks, protectedChunks, keptManifestKeys, chunkSizes);
        }
        if (!errors.isEmpty()) {
            errors.forEach(e -> LOG.warn("store GC of {}: {}", store.describe(), e));
        }
        StoreGc.Result result = new StoreGc.Result(dryRun, startedAt, previous.runAt(), grace, roots.refs(), roots.snapshots(),
            manifests.size(), chunks.size(), traces.size(), reachable, live.size(), candidates.size(), newCandidates,
            sweep.manifests, sweep.chunks, sweep.traces, sweep.bytes, sweep.unknownSize, new ArrayList<>(new TreeSet<>(sweep.deleted)),
            errors, Duration.ofNanos(System.nanoTime() - startedNanos));
        LOG.info("store GC of {}{}: {} manifests ({} reachable), {} chunks, {} traces; {} unreferenced ({} new); {} {} manifests, "
                + "{} chunks, {} traces ({} MiB known) in {} ms{}", store.describe(), dryRun ? " (dry run)" : "",
            result.manifestsScanned(), reachable, result.chunksScanned(), result.tracesScanned(), result.candidates(), newCandidates,
            dryRun ? "would delete" : "deleted", result.deletedManifests(), result.deletedChunks(), result.deletedTraces(),
            result.bytesFreed() >> 20, result.elapsed().toMillis(), errors.isEmpty() ? "" : "; " + errors.size() + " problems");
        return result;
    }

    /** Deletes, in the order that keeps the store consistent for readers: manifests, traces, chunks. */
    private void sweep(GcLock lock, StoreReader reader, Sweep sweep, List<Manifest> manifests, List<String> traces,
                       List<String> chunks, Set<String> protectedChunks, Set<String> keptManifestKeys, Map<String, Long> chunkSizes) {
        List<Manifest> deleted = new ArrayList<>();
        for (int i = 0; i < manifests.size(); i++) {
            if (i % batchSize == 0) {
                lock.renew("deleting manifests");
            }
            Manifest m = manifests.get(i);
            if (sweep.delete(m.key(), m.json().length)) {
                reader.forget(m.key());
                deleted.add(m);
                sweep.manifests++;
            }
        }
        for (int i = 0; i < traces.size(); i++) {
            if (i % batchSize == 0) {
                lock.renew("deleting traces");
            }
            if (sweep.delete(traces.get(i), -1)) {
                sweep.traces++;
            }
        }
        if (!deleted.isEmpty() && !chunks.isEmpty()) {
            // A push of a layer this run found garbage (it skipped the chunks and the manifest it found) may have written
            // its reference since the second mark: put its manifest back and keep its chunks.
            Roots roots;
            try {
                roots = reader.readRoots();
            } catch (DsecException e) {
                throw stop("after deleting " + sweep.deleted.size() + " blobs, before deleting chunks", e);
            }
            for (Manifest m : deleted) {
                if (roots.contains(m.hex())) {
                    store.put(m.key(), m.json());
                    sweep.undelete(m.key(), m.json().length);
                    sweep.manifests--;
                    protectedChunks.addAll(m.manifest().chunks());
                    keptManifestKeys.add(m.key());
                    sweep.errors.add("put back manifest " + m.key() + ": " + roots.hexes().get(m.hex()) + " named it while this "
                        + "run deleted it");
                }
            }
        }
        Set<String> deletedChunks = new HashSet<>();
        for (int from = 0; from < chunks.size(); from += batchSize) {
            lock.renew("deleting chunks");
            beforeChunkBatch.run();
            protectNewManifests(reader, protectedChunks, keptManifestKeys, deletedChunks, sweep, "deleting chunks");
            for (String hex : chunks.subList(from, Math.min(chunks.size(), from + batchSize))) {
                if (protectedChunks.contains(hex)) {
                    continue; // a manifest written since the second mark lists it
                }
                if (sweep.delete(LayerManifest.chunkKey(hex), chunkSizes.getOrDefault(hex, -1L))) {
                    deletedChunks.add(hex);
                    sweep.chunks++;
                }
            }
        }
        if (!deletedChunks.isEmpty()) {
            try {
                protectNewManifests(reader, protectedChunks, keptManifestKeys, deletedChunks, sweep, "checking for late pushes");
            } catch (DsecException e) {
                sweep.errors.add("could not check for layers pushed during the sweep: " + e.getMessage());
            }
        }
    }

    /**
     * Adds the chunks of manifests that appeared since the last listing to {@code protectedChunks}, and reports those
     * that list a chunk this run deleted already: the residual race of a push that skipped a chunk just before it was
     * deleted.
     */
    private void protectNewManifests(StoreReader reader, Set<String> protectedChunks, Set<String> keptManifestKeys,
                                     Set<String> deletedChunks, Sweep sweep, String stage) {
        Map<String, Manifest> now;
        try {
            now = reader.refreshManifests();
        } catch (DsecException e) {
            throw stop("after deleting " + sweep.deleted.size() + " blobs, while " + stage, e);
        }
        for (Manifest m : now.values()) {
            if (!keptManifestKeys.add(m.key())) {
                continue;
            }
            protectedChunks.addAll(m.manifest().chunks());
            List<String> lost = m.manifest().chunks().stream().filter(deletedChunks::contains).distinct().toList();
            if (!lost.isEmpty()) {
                sweep.errors.add("layer " + m.manifest().digest() + " (" + m.manifest().name() + ":" + m.manifest().version()
                    + ") was pushed while this run swept and lists " + lost.size() + " chunk(s) it deleted, e.g. "
                    + LayerManifest.chunkKey(lost.get(0)) + "; push that layer again");
            }
        }
    }

    private static Map<String, Long> chunkSizes(Iterable<Manifest> a, Iterable<Manifest> b, Set<String> wanted) {
        Map<String, Long> sizes = new HashMap<>();
        for (Iterable<Manifest> ms : List.of(a, b)) {
            for (Manifest m : ms) {
                List<String> cs = m.manifest().chunks();
                for (int i = 0; i < cs.size() && sizes.size() < wanted.size(); i++) {
                    if (wanted.contains(cs.get(i))) {
                        sizes.putIfAbsent(cs.get(i), (long) m.manifest().chunkLength(i));
                    }
                }
            }
        }
        return sizes;
    }

    private static String hexOfKey(String key) {
        String rest = key.substring(key.lastIndexOf('/') + 1);
        return rest.endsWith(".json") ? rest.substring(0, rest.length() - 5) : rest;
    }

    private static Instant firstSeen(CandidateState previous, String key, Instant seenAt) {
        Instant first = previous.candidates().get(key);
        return first == null ? seenAt : first;
    }

    private static void summarise(List<String> errors, int count, String what) {
        if (count > MAX_ERRORS_OF_A_KIND) {
            errors.add("… " + count + " " + what + " in all");
        }
    }

    private DsecException stop(String when, DsecException cause) {
        return new DsecException("store GC of " + store.describe() + " stopped " + when + ": " + cause.getMessage(), cause);
    }

    /** Counts and performs deletions. */
    private final class Sweep {
        final List<String> errors;
        final List<String> deleted = new ArrayList<>();
        int manifests;
        int traces;
        int chunks;
        long bytes;
        int unknownSize;
        int failures;

        Sweep(List<String> errors) {
            this.errors = errors;
        }

        void counted(String key, long size) {
            deleted.add(key);
            if (size >= 0) {
                bytes += size;
            } else {
                unknownSize++;
            }
        }

        void undelete(String key, long size) {
            deleted.remove(key);
            bytes -= size;
        }

        boolean delete(String key, long size) {
            try {
                store.delete(key);
            } catch (RuntimeException e) {
                failures++;
                if (failures <= MAX_ERRORS_OF_A_KIND) {
                    errors.add("could not delete " + key + ": " + e.getMessage());
                }
                if (failures > MAX_DELETE_FAILURES) {
                    throw new DsecException("store GC of " + store.describe() + " stopped after deleting " + deleted.size()
                        + " blobs: " + failures + " deletes failed, the last with " + e.getMessage()
                        + "; check the store's health and permissions and run it again", e);
                }
                return false;
            }
            counted(key, size);
            return true;
        }
    }
}
