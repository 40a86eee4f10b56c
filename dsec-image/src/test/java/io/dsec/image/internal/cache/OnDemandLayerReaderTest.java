package io.dsec.image.internal.cache;

import io.dsec.image.testing.MemoryBlobStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.image.internal.fuse.FuseErrnoException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class OnDemandLayerReaderTest {
    @TempDir
    Path dir;

    private final MemoryBlobStore store = new MemoryBlobStore();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private ChunkCache cache;
    private ChunkFetcher fetcher;

    @AfterEach
    void close() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closing(T t) {
        closeables.add(t);
        return t;
    }

    private OnDemandLayerReader reader(TestLayer layer, long budget, int readAhead, Duration timeout) {
        cache = closing(new ChunkCache(dir, budget));
        fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(4, 2, timeout)));
        return closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(readAhead, timeout)));
    }

    private static byte[] read(OnDemandLayerReader r, long offset, int len) throws FuseErrnoException {
        ByteBuffer buf = ByteBuffer.allocate(len);
        r.read(offset, buf);
        return Arrays.copyOf(buf.array(), buf.position());
    }

    private static byte[] slice(byte[] image, long from, long to) {
        return Arrays.copyOfRange(image, (int) from, (int) Math.min(to, image.length));
    }

    @Test
    void readsExactBytesAcrossChunksAndAtEof() throws Exception {
        TestLayer layer = new TestLayer(store, 4 * 1024 + 300, 1024, 1); // last chunk 300 bytes
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        assertThat(r.size()).isEqualTo(4 * 1024 + 300);

        assertThat(read(r, 1000, 100)).isEqualTo(slice(layer.image, 1000, 1100)); // spans chunks 0 and 1
        LayerFetchStats s = r.stats();
        assertThat(s.chunkMisses()).isEqualTo(2);
        assertThat(s.chunkHits()).isZero();
        assertThat(store.gets.get()).isEqualTo(2);

        assertThat(read(r, 0, 2048)).isEqualTo(slice(layer.image, 0, 2048)); // both cached now
        assertThat(r.stats().chunkHits()).isEqualTo(2);
        assertThat(store.gets.get()).isEqualTo(2);

        assertThat(read(r, 4 * 1024 + 200, 4096)).isEqualTo(slice(layer.image, 4 * 1024 + 200, 5000)); // short at EOF
        assertThat(read(r, 4 * 1024 + 300, 10)).isEmpty(); // at EOF
        assertThat(read(r, 1 << 20, 10)).isEmpty(); // past EOF
        assertThat(read(r, 0, layer.image.length + 50)).isEqualTo(layer.image); // one read over all five chunks

        // A read into the middle of a larger buffer fills only position..limit.
        ByteBuffer buf = ByteBuffer.allocate(100);
        buf.position(10).limit(60);
        r.read(3000, buf);
        assertThat(buf.position()).isEqualTo(60);
        assertThat(Arrays.copyOfRange(buf.array(), 10, 60)).isEqualTo(slice(layer.image, 3000, 3050));
        assertThat(Arrays.copyOfRange(buf.array(), 0, 10)).containsOnly((byte) 0);
        // Direct buffers too.
        ByteBuffer direct = ByteBuffer.allocateDirect(1500);
        r.read(500, direct);
        byte[] got = new byte[1500];
        direct.flip().get(got);
        assertThat(got).isEqualTo(slice(layer.image, 500, 2000));
        assertThat(store.gets.get()).isEqualTo(5);
    }

    @Test
    void concurrentReadsOfOneColdChunkFetchItOnce() throws Exception {
        TestLayer layer = new TestLayer(store, 8 * 1024, 1024, 2);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            release.await();
            return bytes;
        };
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        int n = 100;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch ready = new CountDownLatch(n);
            List<Future<byte[]>> results = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int off = 2048 + (i % 10) * 100;
                results.add(pool.submit(() -> {
                    ready.countDown();
                    ready.await();
                    return read(r, off, 100);
                }));
            }
            ready.await();
            release.countDown();
            for (int i = 0; i < n; i++) {
                int off = 2048 + (i % 10) * 100;
                assertThat(results.get(i).get()).isEqualTo(slice(layer.image, off, off + 100));
            }
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
        assertThat(store.gets.get()).isEqualTo(1);
        LayerFetchStats s = r.stats();
        assertThat(s.chunkHits() + s.chunkMisses()).isEqualTo(n);
        assertThat(s.fetches()).isEqualTo(1);
    }

    @Test
    void slowStoreFailsTheReadAfterTheTimeout() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 3);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            release.await();
            return bytes;
        };
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofMillis(200));
        try {
            assertThatThrownBy(() -> read(r, 0, 100)).isInstanceOf(FuseErrnoException.class)
                .satisfies(e -> assertThat(((FuseErrnoException) e).errno())
                    .isIn(FuseErrnoException.ETIMEDOUT, FuseErrnoException.EIO))
                .hasMessageContaining("timed out");
            assertThat(r.stats().failedReads()).isEqualTo(1);
        } finally {
            release.countDown();
        }
    }

    @Test
    void corruptOnceIsServedCorrectly() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 4);
        store.hook = (key, bytes, nth) -> {
            if (nth == 1) {
                bytes[0] ^= 1;
            }
            return bytes;
        };
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        assertThat(read(r, 1024, 1024)).isEqualTo(layer.chunk(1));
        assertThat(r.stats().verificationFailures()).isEqualTo(1);
        assertThat(cache.contains(layer.manifest.chunks().get(1))).isTrue();
    }

    @Test
    void corruptTwiceIsEioAndNothingIsCached() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 5);
        store.hook = (key, bytes, nth) -> {
            bytes[0] ^= 1;
            return bytes;
        };
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        assertThatThrownBy(() -> read(r, 1024, 10)).isInstanceOf(FuseErrnoException.class)
            .satisfies(e -> assertThat(((FuseErrnoException) e).errno()).isEqualTo(FuseErrnoException.EIO))
            .hasMessageContaining("verification");
        assertThat(cache.chunkCount()).isZero();
        assertNoChunkFiles();
        LayerFetchStats s = r.stats();
        assertThat(s.verificationFailures()).isEqualTo(2);
        assertThat(s.failedReads()).isEqualTo(1);
    }

    @Test
    void cacheTooSmallFailsTheReadCleanly() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 6);
        OnDemandLayerReader r = reader(layer, 1000, 0, Duration.ofSeconds(30)); // budget below one chunk
        assertThatThrownBy(() -> read(r, 0, 10)).isInstanceOf(FuseErrnoException.class)
            .satisfies(e -> assertThat(((FuseErrnoException) e).errno()).isEqualTo(FuseErrnoException.EIO))
            .hasMessageContaining("budget");
        assertThat(cache.chunkCount()).isZero();
        assertNoChunkFiles();
    }

    @Test
    void missingChunkIsEio() {
        TestLayer layer = new TestLayer(store, 4096, 1024, 7);
        store.delete(layer.key(2));
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        assertThatThrownBy(() -> read(r, 2048, 10)).isInstanceOf(FuseErrnoException.class)
            .satisfies(e -> assertThat(((FuseErrnoException) e).errno()).isEqualTo(FuseErrnoException.EIO));
    }

    @Test
    void corruptCachedFileIsFetchedAgain() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 8);
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        read(r, 0, 10);
        Files.delete(dir.resolve("chunks").resolve(layer.manifest.chunks().get(0)));
        assertThat(read(r, 0, 1024)).isEqualTo(layer.chunk(0));
        assertThat(store.getsOf(layer.key(0))).isEqualTo(2);
    }

    @Test
    void sequentialReadsPrefetchTheNextChunks() throws Exception {
        TestLayer layer = new TestLayer(store, 16 * 1024, 1024, 9);
        OnDemandLayerReader r = reader(layer, 1 << 20, 4, Duration.ofSeconds(30));
        read(r, 0, 512); // first read: no run yet
        r.readAheadIdle().get();
        assertThat(store.gets.get()).isEqualTo(1);
        read(r, 512, 512); // sequential, but the run has covered only one chunk: adjacent small reads fetch nothing ahead
        r.readAheadIdle().get();
        assertThat(store.getsOf(layer.key(1))).isZero();
        read(r, 1024, 1024); // the run now covers two chunks: a streaming reader, so chunks 2..5 are prefetched
        r.readAheadIdle().get();
        for (int i = 2; i <= 5; i++) {
            assertThat(store.getsOf(layer.key(i))).as("chunk %d", i).isEqualTo(1);
        }
        assertThat(store.getsOf(layer.key(6))).isZero();
        assertThat(read(r, 2048, 1024)).isEqualTo(layer.chunk(2)); // hit, and extends read-ahead to chunk 6
        r.readAheadIdle().get();
        assertThat(store.getsOf(layer.key(6))).isEqualTo(1);
        assertThat(store.getsOf(layer.key(7))).isZero();
        read(r, 2560, 512); // not sequential (overlaps): no more read-ahead
        r.readAheadIdle().get();
        assertThat(store.getsOf(layer.key(7))).isZero();
        read(r, 10 * 1024, 100); // a random read: no read-ahead
        r.readAheadIdle().get();
        assertThat(store.getsOf(layer.key(11))).isZero();

        LayerFetchStats s = r.stats();
        assertThat(s.prefetchedChunks()).isEqualTo(5);
        assertThat(s.fetches()).isEqualTo(8); // chunks 0..6 and 10
        assertThat(s.chunkMisses()).isEqualTo(3); // chunks 0, 1 and 10
        assertThat(s.chunkHits()).isEqualTo(3);
    }

    @Test
    void statsAddUp() throws Exception {
        int size = 20 * 1024 + 77;
        TestLayer layer = new TestLayer(store, size, 1024, 10);
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        Random random = new Random(11);
        long accesses = 0;
        long off = 0;
        while (off < size) {
            int len = 1 + random.nextInt(3000);
            assertThat(read(r, off, len)).isEqualTo(slice(layer.image, off, off + len));
            long end = Math.min(size, off + len);
            accesses += (end - 1) / 1024 - off / 1024 + 1;
            off = end;
        }
        LayerFetchStats s = r.stats();
        assertThat(s.digest()).isEqualTo(layer.manifest.digest());
        assertThat(s.imageBytes()).isEqualTo(size);
        assertThat(s.chunkHits() + s.chunkMisses()).isEqualTo(accesses);
        assertThat(s.chunkMisses()).isEqualTo(layer.manifest.chunkCount());
        assertThat(s.fetches()).isEqualTo(layer.manifest.chunkCount());
        assertThat(s.bytesFetched()).isEqualTo(size);
        assertThat(s.fetchLatencyCount()).isEqualTo(s.fetches());
        assertThat(s.fetchLatencyP50Micros()).isLessThanOrEqualTo(s.fetchLatencyP99Micros());
        assertThat(s.verificationFailures()).isZero();
        assertThat(s.failedReads()).isZero();
        assertThat(s.prefetchedChunks()).isZero();
    }

    @Test
    void fullPullThenReadsAreAllHits() throws Exception {
        TestLayer layer = new TestLayer(store, 10 * 1024, 1024, 12);
        OnDemandLayerReader r = reader(layer, 1 << 20, 4, Duration.ofSeconds(30));
        fetcher.pullAll(layer.manifest, r.statsCollector());
        assertThat(store.gets.get()).isEqualTo(10);
        assertThat(read(r, 0, 10 * 1024)).isEqualTo(layer.image);
        LayerFetchStats s = r.stats();
        assertThat(s.chunkMisses()).isZero();
        assertThat(s.chunkHits()).isEqualTo(10);
        assertThat(s.prefetchedChunks()).isEqualTo(10);
        assertThat(store.gets.get()).isEqualTo(10);
    }

    @Test
    void closedReaderAnswersEio() throws Exception {
        TestLayer layer = new TestLayer(store, 4096, 1024, 13);
        OnDemandLayerReader r = reader(layer, 1 << 20, 0, Duration.ofSeconds(30));
        r.close();
        r.close();
        assertThatThrownBy(() -> read(r, 0, 10)).isInstanceOf(FuseErrnoException.class);
    }

    @Test
    void latencyHistogramBuckets() {
        for (long v : new long[] {0, 1, 3, 4, 5, 7, 8, 100, 1000, 123_456, Long.MAX_VALUE / 2}) {
            int b = LayerStatsCollector.bucket(v);
            assertThat(LayerStatsCollector.bucketUpperBound(b)).as("%d", v).isGreaterThanOrEqualTo(v);
            if (b > 0) {
                assertThat(LayerStatsCollector.bucketUpperBound(b - 1)).as("%d", v).isLessThan(v);
            }
        }
    }

    private void assertNoChunkFiles() throws Exception {
        try (var s = Files.list(dir.resolve("chunks"))) {
            assertThat(s.count()).isZero();
        }
        try (var s = Files.list(dir.resolve("tmp"))) {
            assertThat(s.count()).isZero();
        }
    }
}
