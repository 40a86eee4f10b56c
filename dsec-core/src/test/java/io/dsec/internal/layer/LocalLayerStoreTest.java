package io.dsec.internal.layer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.spi.LayerStore.BuiltImage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store does not look inside images, so these tests store plain bytes. */
class LocalLayerStoreTest {
    @TempDir
    Path stateDir;
    LocalLayerStore store;

    @BeforeEach
    void setUp() {
        store = new LocalLayerStore(stateDir);
    }

    private BuiltImage image(String content) throws Exception {
        byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
        Path file = Files.createTempFile(store.stagingDirectory(), "test-", ".erofs.tmp");
        Files.write(file, bytes);
        String digest = "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        return new BuiltImage(file, digest, bytes.length);
    }

    private List<Path> blobs() throws Exception {
        try (var files = Files.list(stateDir.resolve("layers/blobs/sha256"))) {
            return files.filter(p -> p.toString().endsWith(".erofs")).toList();
        }
    }

    private List<Path> staging() throws Exception {
        try (var files = Files.list(store.stagingDirectory())) {
            return files.toList();
        }
    }

    @Test
    void putThenGetFindAndList() throws Exception {
        BuiltImage image = image("base image");

        Layer layer = store.put(LayerKind.BASE, "debian-12", "2026.11", image);

        assertThat(layer).isEqualTo(new Layer(LayerKind.BASE, "debian-12", "2026.11", image.digest(), image.sizeBytes()));
        assertThat(store.contains(layer.digest())).isTrue();
        assertThat(store.get(layer.digest())).contains(layer);
        assertThat(store.find(LayerKind.BASE, "debian-12", "2026.11")).contains(layer);
        assertThat(store.find(LayerKind.WORKSPACE, "debian-12", "2026.11")).isEmpty();
        assertThat(store.find(LayerKind.BASE, "debian-12", "other")).isEmpty();
        assertThat(store.list()).containsExactly(layer);
        Path blob = store.mountSource(layer);
        assertThat(blob).isEqualTo(stateDir.toAbsolutePath().resolve("layers/blobs/sha256/" + layer.hex() + ".erofs"));
        assertThat(Files.readString(blob)).isEqualTo("base image");
        assertThat(Files.exists(image.file())).isFalse();
        assertThat(stateDir.resolve("layers/refs/base/debian-12/2026.11.json")).isRegularFile();
        assertThat(staging()).isEmpty();
    }

    @Test
    void unknownDigestIsEmptyAndItsMountSourceSaysSo() {
        String digest = "sha256:" + "ab".repeat(32);
        assertThat(store.get(digest)).isEmpty();
        assertThat(store.contains(digest)).isFalse();
        assertThatThrownBy(() -> store.mountSource(new Layer(LayerKind.BASE, "x", "1", digest, 1)))
            .isInstanceOf(DsecException.class)
            .hasMessageContaining("not in the layer store");
    }

    @Test
    void identicalContentIsStoredOnce() throws Exception {
        Layer a = store.put(LayerKind.BASE, "one", "1", image("same bytes"));
        Layer b = store.put(LayerKind.WORKSPACE, "two", "2", image("same bytes"));

        assertThat(b.digest()).isEqualTo(a.digest());
        assertThat(blobs()).hasSize(1);
        assertThat(store.list()).containsExactly(a, b);
        // get(digest) answers with the reference it was last put under
        assertThat(store.get(a.digest())).contains(b);
        assertThat(staging()).isEmpty();
    }

    @Test
    void rebuildingAReferenceWithOtherContentPointsItToTheNewDigest() throws Exception {
        Layer old = store.put(LayerKind.TOOLKIT, "tools", "1.0", image("v1"));
        Layer fresh = store.put(LayerKind.TOOLKIT, "tools", "1.0", image("v2"));

        assertThat(fresh.digest()).isNotEqualTo(old.digest());
        assertThat(store.find(LayerKind.TOOLKIT, "tools", "1.0")).contains(fresh);
        assertThat(store.get(old.digest())).contains(old);
        assertThat(store.list()).containsExactly(fresh);
        assertThat(blobs()).hasSize(2);
    }

    @Test
    void aNewStoreOnTheSameDirectorySeesEverything() throws Exception {
        Layer base = store.put(LayerKind.BASE, "debian-12", "latest", image("base"));
        Layer ws = store.put(LayerKind.WORKSPACE, "task-1", "3", image("workspace"));

        LocalLayerStore reopened = new LocalLayerStore(stateDir);

        assertThat(reopened.list()).containsExactly(base, ws);
        assertThat(reopened.get(ws.digest())).contains(ws);
        assertThat(reopened.find(LayerKind.BASE, "debian-12", "latest")).contains(base);
        assertThat(reopened.mountSource(base)).isEqualTo(store.mountSource(base));
    }

    @Test
    void concurrentPutsOfTheSameContentStoreItOnce() throws Exception {
        int threads = 8;
        List<BuiltImage> images = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            images.add(image("x".repeat(1 << 16)));
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        try {
            List<Future<Layer>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                BuiltImage image = images.get(i);
                String name = "ref-" + (i % 2);
                results.add(pool.submit(() -> {
                    start.await();
                    return store.put(LayerKind.BASE, name, "1", image);
                }));
            }
            start.countDown();
            var digests = new HashSet<String>();
            for (Future<Layer> result : results) {
                digests.add(result.get(60, TimeUnit.SECONDS).digest());
            }
            assertThat(digests).containsExactly(images.get(0).digest());
        } finally {
            pool.shutdownNow();
        }

        assertThat(blobs()).hasSize(1);
        assertThat(Files.size(blobs().get(0))).isEqualTo(1 << 16);
        assertThat(staging()).isEmpty();
        assertThat(store.list()).extracting(Layer::name).containsExactly("ref-0", "ref-1");
    }
}
