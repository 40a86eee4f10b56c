package io.dsec.image.internal.chunk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ImageFetchException;
import io.dsec.InvalidSpecException;
import io.dsec.LayerBuildException;
import io.dsec.LayerKind;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.LayerManifest;
import io.dsec.image.internal.chunk.LayerPusher.Progress;
import io.dsec.image.internal.chunk.LayerPusher.PushStats;
import java.io.ByteArrayOutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LayerPusherTest {
    private static final int K64 = 64 * 1024;

    @TempDir
    Path dir;
    private RecordingStore store;
    private LayerPusher pusher;
    private final Chunker chunker = new Chunker(K64);

    @BeforeEach
    void open() {
        store = new RecordingStore(BlobStores.directory(dir.resolve("store")));
        pusher = new LayerPusher(store, 4);
    }

    @AfterEach
    void close() {
        pusher.close();
        store.close();
    }

    /** A store that records the keys put, in order, and can fail puts. */
    static final class RecordingStore implements BlobStore {
        final BlobStore delegate;
        final List<String> puts = Collections.synchronizedList(new ArrayList<>());
        volatile Predicate<String> failPut = k -> false;

        RecordingStore(BlobStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public byte[] get(String key) {
            return delegate.get(key);
        }

        @Override
        public byte[] getRange(String key, long offset, int length) {
            return delegate.getRange(key, offset, length);
        }

        @Override
        public boolean exists(String key) {
            return delegate.exists(key);
        }

        @Override
        public void put(String key, byte[] data) {
            if (failPut.test(key)) {
                throw new ImageFetchException("injected failure writing " + key);
            }
            delegate.put(key, data);
            puts.add(key);
        }

        @Override
        public List<String> list(String prefix) {
            return delegate.list(prefix);
        }

        @Override
        public void delete(String key) {
            delegate.delete(key);
        }

        @Override
        public boolean writable() {
            return true;
        }

        @Override
        public String describe() {
            return "recording " + delegate.describe();
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    /** An image made of 64 KiB blocks, each filled from the seed given for it (0: zeros). */
    private Path image(String name, long... blockSeeds) throws Exception {
        byte[] data = new byte[blockSeeds.length * K64];
        for (int i = 0; i < blockSeeds.length; i++) {
            if (blockSeeds[i] != 0) {
                byte[] block = new byte[K64];
                new Random(blockSeeds[i]).nextBytes(block);
                System.arraycopy(block, 0, data, i * K64, K64);
            }
        }
        return Files.write(dir.resolve(name), data);
    }

    private PushStats push(Path image, String name) {
        return pusher.push(image, chunker, LayerKind.BASE, name, "1", null);
    }

    @Test
    void aPushStoresEveryChunkThenTheManifestAndTheImageCanBeReassembled() throws Exception {
        Path image = image("a.erofs", 1, 2, 3, 4, 5);
        LayerManifest m = chunker.chunk(image, LayerKind.BASE, "a", "1");

        PushStats stats = pusher.push(image, m, null);

        assertThat(stats.chunksTotal()).isEqualTo(5);
        assertThat(stats.chunksUploaded()).isEqualTo(5);
        assertThat(stats.chunksSkipped()).isZero();
        assertThat(stats.bytesUploaded()).isEqualTo(5L * K64);
        assertThat(stats.bytesTotal()).isEqualTo(5L * K64);
        assertThat(stats.manifestWritten()).isTrue();
        assertThat(stats.digest()).isEqualTo(m.digest());

        LayerManifest stored = LayerManifest.parse(store.get(LayerManifest.manifestKey(m.digest())), "test");
        assertThat(stored).isEqualTo(m);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String hex : stored.chunks()) {
            out.write(store.get(LayerManifest.chunkKey(hex)));
        }
        assertThat(out.toByteArray()).isEqualTo(Files.readAllBytes(image));
    }

    @Test
    void theManifestIsWrittenLast() throws Exception {
        Path image = image("a.erofs", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
        PushStats stats = push(image, "a");

        assertThat(store.puts).hasSize(13);
        assertThat(store.puts.get(store.puts.size() - 1)).isEqualTo(LayerManifest.manifestKey(stats.digest()));
        assertThat(store.puts.subList(0, 12)).allSatisfy(k -> assertThat(k).startsWith("chunks/sha256/"));
    }

    @Test
    void aSecondPushOfTheSameImageUploadsNothing() throws Exception {
        Path image = image("a.erofs", 1, 2, 3, 4);
        push(image, "a");
        store.puts.clear();

        PushStats again = push(image, "a");

        assertThat(again.chunksUploaded()).isZero();
        assertThat(again.chunksSkipped()).isEqualTo(4);
        assertThat(again.bytesUploaded()).isZero();
        assertThat(again.manifestWritten()).isFalse();
        assertThat(store.puts).isEmpty();
    }

    @Test
    void imagesThatShareContentShareChunks() throws Exception {
        Path a = image("a.erofs", 1, 2, 3, 4);
        Path b = image("b.erofs", 1, 2, 30, 40, 50);

        PushStats first = push(a, "a");
        PushStats second = push(b, "b");

        assertThat(first.chunksUploaded()).isEqualTo(4);
        assertThat(second.chunksTotal()).isEqualTo(5);
        assertThat(second.chunksSkipped()).isEqualTo(2);
        assertThat(second.chunksUploaded()).isEqualTo(3);
        assertThat(second.bytesUploaded()).isEqualTo(3L * K64);
        assertThat(store.list("chunks/")).hasSize(7);
        assertThat(store.list("layers/")).hasSize(2);
    }

    @Test
    void aChunkRepeatedInOneImageIsUploadedOnce() throws Exception {
        Path image = image("zeros.erofs", 0, 0, 1, 0, 0, 0);

        PushStats stats = push(image, "z");

        assertThat(stats.chunksTotal()).isEqualTo(6);
        assertThat(stats.chunksUnique()).isEqualTo(2);
        assertThat(stats.chunksUploaded()).isEqualTo(2);
        assertThat(stats.bytesUploaded()).isEqualTo(2L * K64);
        assertThat(store.list("chunks/")).hasSize(2);
    }

    @Test
    void progressGrowsToTheImageSize() throws Exception {
        push(image("a.erofs", 1, 2), "a");
        Path b = image("b.erofs", 1, 2, 3, 4, 0, 0);
        List<Progress> seen = Collections.synchronizedList(new ArrayList<>());

        pusher.push(b, chunker, LayerKind.BASE, "b", "1", seen::add);

        assertThat(seen).hasSize(5); // one per distinct chunk
        for (int i = 1; i < seen.size(); i++) {
            assertThat(seen.get(i).bytesDone()).isGreaterThan(seen.get(i - 1).bytesDone());
        }
        Progress last = seen.get(seen.size() - 1);
        assertThat(last.bytesDone()).isEqualTo(last.bytesTotal()).isEqualTo(6L * K64);
        assertThat(last.chunksUploaded()).isEqualTo(3);
        assertThat(last.chunksSkipped()).isEqualTo(2);
        assertThat(last.chunksToCheck()).isEqualTo(5);
    }

    @Test
    void aFailedChunkUploadFailsThePushWithoutAManifest() throws Exception {
        Path image = image("a.erofs", 1, 2, 3, 4, 5, 6);
        LayerManifest m = chunker.chunk(image, LayerKind.BASE, "a", "1");
        String bad = LayerManifest.chunkKey(m.chunks().get(3));
        store.failPut = bad::equals;

        assertThatThrownBy(() -> pusher.push(image, m, null)).isInstanceOf(ImageFetchException.class)
            .hasMessageContaining("injected failure");
        assertThat(store.exists(LayerManifest.manifestKey(m.digest()))).isFalse();

        store.failPut = k -> false;
        PushStats retry = pusher.push(image, m, null);
        assertThat(retry.chunksUploaded()).isEqualTo(6 - retry.chunksSkipped()).isGreaterThanOrEqualTo(1);
        assertThat(store.exists(LayerManifest.manifestKey(m.digest()))).isTrue();
    }

    @Test
    void anImageChangedAfterChunkingIsRefused() throws Exception {
        Path image = image("a.erofs", 1, 2, 3);
        LayerManifest m = chunker.chunk(image, LayerKind.BASE, "a", "1");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.seek(K64 + 10);
            f.write(0x5a ^ f.read());
        }

        assertThatThrownBy(() -> pusher.push(image, m, null)).isInstanceOf(LayerBuildException.class)
            .hasMessageContaining("changed");
        assertThat(store.exists(LayerManifest.manifestKey(m.digest()))).isFalse();
    }

    @Test
    void aGivenExecutorIsUsedAndLeftOpen() throws Exception {
        AtomicInteger ran = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            try (LayerPusher p = new LayerPusher(store, r -> {
                ran.incrementAndGet();
                pool.execute(r);
            }, 2)) {
                PushStats stats = p.push(image("a.erofs", 1, 2, 3), chunker, LayerKind.BASE, "a", "1", null);
                assertThat(stats.chunksUploaded()).isEqualTo(3);
            }
            assertThat(ran.get()).isEqualTo(3);
            assertThat(pool.isShutdown()).isFalse();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aLargePushLogsAndCounts() throws Exception {
        // 65 MiB of zeros and a few distinct blocks: over the progress-logging threshold, cheap to store.
        long[] seeds = new long[(int) (LayerPusher.LOG_PROGRESS_ABOVE / K64) + 16];
        seeds[0] = 1;
        seeds[seeds.length - 1] = 2;
        PushStats stats = push(image("big.erofs", seeds), "big");

        assertThat(stats.bytesTotal()).isGreaterThan(LayerPusher.LOG_PROGRESS_ABOVE);
        assertThat(stats.chunksUnique()).isEqualTo(3);
        assertThat(stats.chunksUploaded()).isEqualTo(3);
    }

    @Test
    void badArgumentsAreRejected() {
        assertThatThrownBy(() -> new LayerPusher(null)).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> new LayerPusher(store, 0)).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("concurrency"));
        try (BlobStore readOnly = BlobStores.http(java.net.URI.create("http://127.0.0.1:1/"))) {
            assertThatThrownBy(() -> new LayerPusher(readOnly)).isInstanceOf(InvalidSpecException.class)
                .hasMessageContaining("read-only");
        }
    }
}
