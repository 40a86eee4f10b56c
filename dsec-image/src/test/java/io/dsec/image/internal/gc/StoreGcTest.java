package io.dsec.image.internal.gc;

import io.dsec.image.testing.MutableClock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.InvalidSpecException;
import io.dsec.LayerKind;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.LayerManifest;
import io.dsec.image.StoreGc;
import io.dsec.image.internal.chunk.Chunker;
import io.dsec.image.internal.chunk.LayerPusher;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StoreGcTest {
    private static final Duration GRACE = Duration.ofHours(1);
    private final GcTestStore store = new GcTestStore();
    private final MutableClock clock = new MutableClock(Instant.parse("2024-05-01T00:00:00Z"));

    // --- grace across runs ---

    @Test
    void unreferencedChunkIsDeletedOnlyAfterTheGraceAcrossTwoRuns() {
        LayerManifest kept = push("kept", "k1", "k2");
        ref(kept);
        String orphan = putChunk("orphan");

        StoreGc.Result first = gc();
        assertThat(first.candidates()).isEqualTo(1);
        assertThat(first.newCandidates()).isEqualTo(1);
        assertThat(first.deletedTotal()).isZero();
        assertThat(first.previousRunAt()).isNull();
        assertThat(store.exists(orphan)).isTrue();

        clock.advance(Duration.ofMinutes(59));
        StoreGc.Result second = gc();
        assertThat(second.newCandidates()).isZero();
        assertThat(second.deletedTotal()).isZero();
        assertThat(store.exists(orphan)).isTrue();

        clock.advance(Duration.ofMinutes(1));
        StoreGc.Result third = gc();
        assertThat(third.deleted()).containsExactly(orphan);
        assertThat(third.deletedChunks()).isEqualTo(1);
        assertThat(third.errors()).isEmpty();
        assertThat(store.exists(orphan)).isFalse();
        assertLayerIntact(kept);
        assertThat(store.exists(StoreGc.LOCK_KEY)).isFalse();
    }

    @Test
    void oneRunLongAfterAnUploadDeletesNothingItSeesForTheFirstTime() {
        String orphan = putChunk("orphan");
        clock.advance(Duration.ofDays(30)); // the store has no timestamps: the first sighting starts the grace

        assertThat(gc().deletedTotal()).isZero();
        assertThat(store.exists(orphan)).isTrue();
    }

    @Test
    void chunkReferencedAgainBetweenRunsSurvivesAndItsGraceStartsAgain() {
        LayerManifest layer = push("w", "a", "b");

        gc(); // layer unreferenced: manifest and chunks are candidates
        clock.advance(Duration.ofMinutes(30));
        ref(layer);
        clock.advance(Duration.ofHours(2));
        StoreGc.Result referenced = gc();
        assertThat(referenced.deletedTotal()).isZero();
        assertThat(referenced.candidates()).isZero();
        assertLayerIntact(layer);

        unref(layer);
        clock.advance(Duration.ofMinutes(1));
        assertThat(gc().deletedTotal()).as("first seen again now, not two hours ago").isZero();
        assertLayerIntact(layer);

        clock.advance(GRACE);
        StoreGc.Result after = gc();
        assertThat(after.deletedManifests()).isEqualTo(1);
        assertThat(after.deletedChunks()).isEqualTo(2);
        assertGone(layer);
    }

    // --- concurrent pushes ---

    @Test
    void pushInProgressSurvivesARunAndThenBecomesReachable() {
        LayerManifest pushing = manifest("p", LayerKind.WORKSPACE, "p1", "p2", "p3");
        putChunks(pushing); // chunks uploaded, manifest and ref not yet

        StoreGc.Result during = gc();
        assertThat(during.candidates()).isEqualTo(3);
        assertThat(during.deletedTotal()).isZero();

        clock.advance(Duration.ofMinutes(20));
        putManifest(pushing);
        ref(pushing);
        clock.advance(Duration.ofHours(3));
        StoreGc.Result after = gc();
        assertThat(after.deletedTotal()).isZero();
        assertThat(after.candidates()).isZero();
        assertThat(after.reachableManifests()).isEqualTo(1);
        assertThat(after.reachableChunks()).isEqualTo(3);
        assertLayerIntact(pushing);
    }

    @Test
    void chunksOfAManifestWithoutReferenceYetAreKeptWhileTheManifestIs() {
        LayerManifest pushing = manifest("p", LayerKind.WORKSPACE, "p1", "p2");
        putChunks(pushing);
        gc();
        clock.advance(Duration.ofHours(2)); // the chunks are past their grace...
        putManifest(pushing);               // ...when the manifest lands; the reference is still to come

        StoreGc.Result r = gc();
        assertThat(r.deletedTotal()).isZero();
        assertLayerIntact(pushing);

        ref(pushing);
        clock.advance(Duration.ofHours(2));
        assertThat(gc().deletedTotal()).isZero();
        assertLayerIntact(pushing);
    }

    @Test
    void pushThatLandsBetweenMarkAndSweepIsKept() {
        LayerManifest pushing = manifest("p", LayerKind.WORKSPACE, "p1", "p2");
        putChunks(pushing);
        String orphan = putChunk("orphan");
        gc();
        clock.advance(Duration.ofHours(2));

        GarbageCollector gc = new GarbageCollector(store, GRACE, clock, false);
        gc.afterMark = () -> {
            putManifest(pushing);
            ref(pushing);
        };
        StoreGc.Result r = gc.run();

        assertThat(r.deleted()).containsExactly(orphan);
        assertLayerIntact(pushing);
    }

    @Test
    void manifestWrittenDuringTheChunkSweepSparesItsChunks() {
        LayerManifest pushing = manifest("p", LayerKind.WORKSPACE, "c0", "c1", "c2", "c3");
        putChunks(pushing);
        gc();
        clock.advance(Duration.ofHours(2));

        GarbageCollector gc = new GarbageCollector(store, GRACE, clock, false);
        gc.batchSize = 1;
        int[] batches = {0};
        gc.beforeChunkBatch = () -> {
            if (++batches[0] == 2) {
                putManifest(pushing); // the push that skipped these chunks writes its manifest mid-sweep
            }
        };
        StoreGc.Result r = gc.run();

        assertThat(r.deletedChunks()).isEqualTo(1);
        String deleted = r.deleted().get(0);
        assertThat(r.errors()).singleElement().asString().contains("was pushed while this run swept")
            .contains(pushing.digest()).contains(deleted).contains("push that layer again");
        pushing.chunks().stream().map(LayerManifest::chunkKey).filter(k -> !k.equals(deleted))
            .forEach(k -> assertThat(store.exists(k)).as(k).isTrue());
    }

    @Test
    void referenceToAManifestDeletedInThisRunPutsItBackAndKeepsItsChunks() {
        LayerManifest old = push("old", "o1", "o2");
        gc();
        clock.advance(Duration.ofHours(2));
        // the same layer is pushed again: the pusher finds chunks and manifest present, and writes the reference just
        // as the GC deletes the manifest
        store.afterDelete = key -> {
            if (key.equals(LayerManifest.manifestKey(old.digest()))) {
                ref(old);
            }
        };

        StoreGc.Result r = gc();

        assertThat(r.deletedTotal()).isZero();
        assertThat(r.errors()).singleElement().asString().contains("put back manifest");
        assertLayerIntact(old);
    }

    @Test
    void runningLeaseStopsASecondRunAndExpires() {
        store.put(StoreGc.LOCK_KEY, ("{\"owner\":\"other\",\"host\":\"h2\",\"acquiredAt\":\"" + clock.instant()
            + "\",\"expiresAt\":\"" + clock.instant().plus(Duration.ofMinutes(15)) + "\"}").getBytes(StandardCharsets.UTF_8));

        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class).hasMessageContaining("another run (host h2")
            .hasMessageContaining(StoreGc.LOCK_KEY);

        clock.advance(Duration.ofMinutes(16));
        assertThat(gc().errors()).isEmpty();
        assertThat(store.exists(StoreGc.LOCK_KEY)).isFalse();
    }

    // --- reachability ---

    @Test
    void sharedChunksOfADeletedLayerSurviveWhileAnotherLayerUsesThem() {
        LayerManifest one = push("one", "a", "shared", "b");
        LayerManifest two = push("two", "shared", "c");
        ref(one);
        ref(two);
        gc();
        unref(one);

        gc();
        clock.advance(GRACE);
        StoreGc.Result r = gc();

        assertThat(r.deleted()).containsExactlyInAnyOrder(LayerManifest.manifestKey(one.digest()), chunk("a"), chunk("b"));
        assertThat(r.bytesFreed()).isEqualTo(one.toJson().length + 2L * 65536);
        assertThat(store.exists(chunk("shared"))).isTrue();
        assertLayerIntact(two);
    }

    @Test
    void deletedSnapshotRecordReleasesItsDiffLayerAfterTheGrace() {
        LayerManifest base = push("base", "b1", "b2");
        ref(base);
        LayerManifest diff = manifest("diff-1", LayerKind.DIFF, "d1", "b2", "d2"); // shares b2 with the base
        putChunks(diff);
        putManifest(diff);
        store.put(LayerManifest.traceKey(diff.digest()), "{}".getBytes(StandardCharsets.UTF_8));
        snapshot("snap-1", base.digest(), diff.digest());

        StoreGc.Result held = gc();
        assertThat(held.snapshotsScanned()).isEqualTo(1);
        assertThat(held.reachableManifests()).isEqualTo(2);
        assertThat(held.candidates()).isZero();

        store.delete("snapshots/snap-1.json");
        clock.advance(Duration.ofMinutes(5));
        StoreGc.Result released = gc();
        assertThat(released.candidates()).isEqualTo(4); // manifest, trace, d1, d2
        assertThat(released.deletedTotal()).isZero();

        clock.advance(GRACE);
        StoreGc.Result r = gc();
        assertThat(r.deleted()).containsExactlyInAnyOrder(LayerManifest.manifestKey(diff.digest()),
            LayerManifest.traceKey(diff.digest()), chunk("d1"), chunk("d2"));
        assertThat(r.deletedOfUnknownSize()).isEqualTo(1); // the trace
        assertLayerIntact(base);
    }

    @Test
    void snapshotRecordKeepsEveryLayerItNamesAnywhere() {
        LayerManifest base = push("base", "b1");
        LayerManifest diff = manifest("diff", LayerKind.DIFF, "d1");
        putChunks(diff);
        putManifest(diff);
        // the shape dsec-snapshot writes; here the diff is named only under "diff", not in "layers"
        store.put("snapshots/snap-0123456789abcdef.json", ("{\"format\":1,\"id\":\"snap-0123456789abcdef\",\"image\":{\"base\":"
            + "{\"kind\":\"BASE\",\"digest\":\"" + base.digest() + "\"}},\"diff\":{\"kind\":\"DIFF\",\"digest\":\""
            + diff.digest() + "\"},\"layers\":[\"" + base.digest() + "\"]}").getBytes(StandardCharsets.UTF_8));

        gc();
        clock.advance(Duration.ofDays(1));
        StoreGc.Result r = gc();

        assertThat(r.deletedTotal()).isZero();
        assertThat(r.reachableManifests()).isEqualTo(2);
        assertLayerIntact(base);
        assertLayerIntact(diff);
    }

    @Test
    void referencesKeepTheirLayersAndTracesForever() {
        LayerManifest base = push("base", "b1", "b2");
        LayerManifest tool = push("tool", "t1");
        ref(base);
        ref(tool);
        store.put(LayerManifest.traceKey(base.digest()), "{}".getBytes(StandardCharsets.UTF_8));
        String strayTrace = LayerManifest.traceKey("sha256:" + hex("gone"));
        store.put(strayTrace, "{}".getBytes(StandardCharsets.UTF_8));
        Map<String, String> before = store.snapshot();

        for (int i = 0; i < 5; i++) {
            gc();
            clock.advance(Duration.ofDays(1));
        }

        Map<String, String> after = store.snapshot();
        before.remove(strayTrace);
        assertThat(after).isEqualTo(before);
        assertThat(store.exists(LayerManifest.traceKey(base.digest()))).isTrue();
    }

    @Test
    void referenceToAMissingLayerIsReportedAndDoesNotStopTheRun() {
        LayerManifest gone = manifest("gone", LayerKind.WORKSPACE, "g1");
        ref(gone);
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);

        StoreGc.Result r = gc();

        assertThat(r.deleted()).containsExactly(orphan);
        assertThat(r.errors()).singleElement().asString().contains("refs/workspace/gone/1.json")
            .contains("whose manifest is not in the store");
    }

    @Test
    void keysOutsideTheLayoutAreLeftAlone() {
        store.put("chunks/sha256/not-a-digest", new byte[1]);
        store.put("layers/sha256/readme.txt", new byte[1]);
        store.put("other/thing", new byte[1]);
        store.put("snapshots/snap-1/notes.txt", new byte[1]);
        Map<String, String> before = store.snapshot();

        gc();
        clock.advance(Duration.ofDays(1));
        gc();

        assertThat(store.snapshot()).isEqualTo(before);
    }

    // --- failing safe ---

    @Test
    void corruptManifestStopsTheRunBeforeItDeletesAnything() {
        LayerManifest layer = push("w", "a", "b");
        ref(layer);
        LayerManifest old = push("old", "o1");
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);
        String key = LayerManifest.manifestKey(layer.digest());
        store.put(key, "{\"schemaVersion\":1,\"digest\":".getBytes(StandardCharsets.UTF_8));
        Map<String, String> before = store.snapshot();

        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class)
            .hasMessageContaining("stopped before deleting anything").hasMessageContaining(key)
            .hasMessageContaining("is not valid JSON");
        assertThat(store.snapshot()).isEqualTo(before);
        assertThat(store.exists(orphan)).isTrue();
        assertLayerIntact(old);
        assertThat(store.exists(StoreGc.LOCK_KEY)).isFalse();
    }

    @Test
    void corruptUnreferencedManifestAlsoStopsTheRun() {
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);
        LayerManifest m = manifest("x", LayerKind.WORKSPACE, "x1");
        String key = LayerManifest.manifestKey(m.digest());
        store.put(key, new String(m.toJson(), StandardCharsets.UTF_8).replace("\"chunkSize\":65536", "\"chunkSize\":3")
            .getBytes(StandardCharsets.UTF_8));

        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class)
            .hasMessageContaining("stopped before deleting anything").hasMessageContaining(key)
            .hasMessageContaining("chunkSize 3 is not a power of two");
        assertThat(store.exists(orphan)).isTrue();
    }

    @Test
    void manifestUnderAnotherLayersKeyStopsTheRun() {
        LayerManifest a = manifest("a", LayerKind.WORKSPACE, "a1");
        LayerManifest b = manifest("b", LayerKind.WORKSPACE, "b1");
        store.put(LayerManifest.manifestKey(a.digest()), b.toJson());

        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class)
            .hasMessageContaining("describes " + b.digest() + ", not the layer its key names");
    }

    @Test
    void corruptReferenceOrSnapshotRecordStopsTheRun() {
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);

        store.put("refs/base/x/1.json", "{\"digest\":\"sha256:nothex\"}".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class)
            .hasMessageContaining("reference refs/base/x/1.json").hasMessageContaining("no valid \"digest\"");
        store.delete("refs/base/x/1.json");

        store.put("snapshots/s.json", "{\"id\":\"s\"}".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class)
            .hasMessageContaining("snapshot record snapshots/s.json").hasMessageContaining("no \"layers\" array");
        store.put("snapshots/s.json", "{\"layers\":[\"sha256:12\"]}".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(this::gc).isInstanceOf(DsecException.class).hasMessageContaining("layers[0] \"sha256:12\"");
        assertThat(store.exists(orphan)).isTrue();
    }

    @Test
    void damagedCandidateFileRestartsTheGraceInsteadOfDeleting() {
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);
        store.put(StoreGc.CANDIDATES_KEY, "not json".getBytes(StandardCharsets.UTF_8));

        StoreGc.Result r = gc();
        assertThat(r.deletedTotal()).isZero();
        assertThat(r.errors()).singleElement().asString().contains(StoreGc.CANDIDATES_KEY).contains("damaged");

        clock.advance(GRACE);
        assertThat(gc().deleted()).containsExactly(orphan);
    }

    @Test
    void failedDeleteIsReportedAndItsGraceStartsAgain() {
        String a = putChunk("a");
        String b = putChunk("b");
        gc();
        clock.advance(GRACE);
        store.failDelete = a::equals;

        StoreGc.Result r = gc();
        assertThat(r.deleted()).containsExactly(b);
        assertThat(r.errors()).singleElement().asString().contains("could not delete " + a);

        store.failDelete = k -> false;
        clock.advance(Duration.ofMinutes(1));
        assertThat(gc().deletedTotal()).as("a may have been deleted and pushed again: no old first-seen time").isZero();
        clock.advance(GRACE);
        assertThat(gc().deleted()).containsExactly(a);
    }

    @Test
    void readOnlyStoreIsRefused() {
        BlobStore http = BlobStores.http(URI.create("http://127.0.0.1:9/dsec/"));

        assertThatThrownBy(() -> StoreGc.run(http, GRACE, clock)).isInstanceOf(DsecException.class)
            .hasMessageContaining("read-only").hasMessageContaining("directory or S3");
        assertThatThrownBy(() -> StoreGc.run(store, Duration.ofSeconds(-1), clock)).isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("grace");
    }

    @Test
    void dryRunReportsWithoutDeletingOrWriting() {
        String orphan = putChunk("orphan");
        gc();
        clock.advance(GRACE);
        byte[] state = store.get(StoreGc.CANDIDATES_KEY);

        StoreGc.Result dry = StoreGc.dryRun(store, GRACE, clock);

        assertThat(dry.dryRun()).isTrue();
        assertThat(dry.deleted()).containsExactly(orphan);
        assertThat(store.exists(orphan)).isTrue();
        assertThat(store.get(StoreGc.CANDIDATES_KEY)).isEqualTo(state);
        assertThat(gc().deleted()).containsExactly(orphan);
    }

    // --- a real directory store and real pushes ---

    @Test
    void directoryStoreWithPushedLayers(@TempDir Path dir) throws Exception {
        try (BlobStore disk = BlobStores.directory(dir.resolve("store"));
             LayerPusher pusher = new LayerPusher(disk, 2)) {
            Chunker chunker = new Chunker(65536);
            byte[] common = random(3 * 65536, 1);
            Path imgA = image(dir, "a", concat(common, random(2 * 65536, 2)));
            Path imgB = image(dir, "b", concat(common, random(65536 + 10, 3)));
            LayerManifest a = chunker.chunk(imgA, LayerKind.BASE, "a", "1");
            LayerManifest b = chunker.chunk(imgB, LayerKind.BASE, "b", "1");
            pusher.push(imgA, a, null);
            pusher.push(imgB, b, null);
            disk.put(LayerManifest.refKey(LayerKind.BASE, "b", "1"), ("{\"digest\":\"" + b.digest() + "\"}").getBytes(StandardCharsets.UTF_8));

            assertThat(StoreGc.run(disk, GRACE, clock).deletedTotal()).isZero();
            clock.advance(GRACE);
            StoreGc.Result r = StoreGc.run(disk, GRACE, clock);

            assertThat(r.deletedManifests()).isEqualTo(1);
            assertThat(r.deletedChunks()).isEqualTo(2);
            assertThat(r.bytesFreed()).isEqualTo(a.toJson().length + 2L * 65536);
            assertThat(disk.exists(LayerManifest.manifestKey(a.digest()))).isFalse();
            for (String c : b.chunks()) {
                assertThat(disk.exists(LayerManifest.chunkKey(c))).isTrue();
            }
            assertThat(disk.list("gc/")).containsExactly(StoreGc.CANDIDATES_KEY);
        }
    }

    // --- helpers ---

    private StoreGc.Result gc() {
        return StoreGc.run(store, GRACE, clock);
    }

    private static String hex(String seed) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(seed.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String chunk(String seed) {
        return LayerManifest.chunkKey(hex(seed));
    }

    private static LayerManifest manifest(String name, LayerKind kind, String... chunkSeeds) {
        List<String> chunks = Arrays.stream(chunkSeeds).map(StoreGcTest::hex).toList();
        return new LayerManifest(1, "sha256:" + hex("layer " + name), kind, name, "1", 65536L * chunks.size(), 65536, chunks);
    }

    private String putChunk(String seed) {
        store.put(chunk(seed), seed.getBytes(StandardCharsets.UTF_8));
        return chunk(seed);
    }

    private void putChunks(LayerManifest m) {
        m.chunks().forEach(c -> store.put(LayerManifest.chunkKey(c), c.getBytes(StandardCharsets.UTF_8)));
    }

    private void putManifest(LayerManifest m) {
        store.put(LayerManifest.manifestKey(m.digest()), m.toJson());
    }

    private LayerManifest push(String name, String... chunkSeeds) {
        LayerManifest m = manifest(name, LayerKind.WORKSPACE, chunkSeeds);
        putChunks(m);
        putManifest(m);
        return m;
    }

    private void ref(LayerManifest m) {
        store.put(LayerManifest.refKey(m.kind(), m.name(), m.version()), ("{\"kind\":\"" + m.kind() + "\",\"name\":\"" + m.name()
            + "\",\"version\":\"1\",\"digest\":\"" + m.digest() + "\",\"sizeBytes\":" + m.sizeBytes() + "}")
            .getBytes(StandardCharsets.UTF_8));
    }

    private void unref(LayerManifest m) {
        store.delete(LayerManifest.refKey(m.kind(), m.name(), m.version()));
    }

    private void snapshot(String id, String... digests) {
        String layers = Arrays.stream(digests).map(d -> "\"" + d + "\"").collect(Collectors.joining(","));
        store.put("snapshots/" + id + ".json", ("{\"id\":\"" + id + "\",\"layers\":[" + layers + "]}").getBytes(StandardCharsets.UTF_8));
    }

    private void assertLayerIntact(LayerManifest m) {
        assertThat(store.exists(LayerManifest.manifestKey(m.digest()))).as("manifest of " + m.name()).isTrue();
        for (String c : m.chunks()) {
            assertThat(store.exists(LayerManifest.chunkKey(c))).as("chunk of " + m.name()).isTrue();
        }
    }

    private void assertGone(LayerManifest m) {
        assertThat(store.exists(LayerManifest.manifestKey(m.digest()))).isFalse();
        for (String c : m.chunks()) {
            assertThat(store.exists(LayerManifest.chunkKey(c))).isFalse();
        }
    }

    private static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    private static Path image(Path dir, String name, byte[] data) throws Exception {
        return Files.write(dir.resolve(name + ".erofs"), data);
    }
}
