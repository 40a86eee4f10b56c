package io.dsec.image.internal.cache;

import io.dsec.image.testing.MemoryBlobStore;
import io.dsec.image.testing.MutableClock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ImageFetchException;
import io.dsec.image.LayerManifest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** AccessRecorder, AccessTrace and Prefetcher. */
@Timeout(60)
class OnDemandPrefetchTest {
    @TempDir
    Path dir;

    private final MemoryBlobStore store = new MemoryBlobStore();
    private final MutableClock clock = new MutableClock(Instant.parse("2025-01-01T00:00:00Z"));
    private final List<AutoCloseable> closeables = new ArrayList<>();

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

    @Test
    void recorderKeepsFirstReadOrderUntilTheWindowEnds() {
        AccessRecorder rec = new AccessRecorder("sha256:abc", Duration.ofSeconds(30), clock);
        rec.onRead(3);
        rec.onRead(1);
        rec.onRead(3);
        clock.advance(Duration.ofSeconds(29));
        rec.onRead(7);
        assertThat(rec.recording()).isTrue();
        clock.advance(Duration.ofSeconds(1));
        rec.onRead(9);
        assertThat(rec.recording()).isFalse();
        clock.advance(Duration.ofSeconds(-10)); // stays stopped
        rec.onRead(10);
        assertThat(rec.trace()).containsExactly(3, 1, 7);
        rec.stop();
        assertThat(rec.toTrace()).isEqualTo(new AccessTrace("sha256:abc", List.of(3, 1, 7)));
    }

    @Test
    void traceJsonRoundTrips() {
        AccessTrace t = new AccessTrace("sha256:abc", List.of(5, 0, 2));
        String json = new String(t.toJson(), StandardCharsets.UTF_8);
        assertThat(json).isEqualTo("{\"digest\":\"sha256:abc\",\"chunks\":[5,0,2]}");
        assertThat(AccessTrace.fromJson(t.toJson())).isEqualTo(t);
        assertThat(t.key()).isEqualTo(LayerManifest.traceKey("sha256:abc"));
        assertThatThrownBy(() -> AccessTrace.fromJson("nope".getBytes(StandardCharsets.UTF_8)))
            .isInstanceOf(ImageFetchException.class);
    }

    @Test
    void readerRecordsChunkOrder() throws Exception {
        TestLayer layer = new TestLayer(store, 8 * 1024, 1024, 1);
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, ChunkFetcher.Config.defaults()));
        OnDemandLayerReader r = closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(0, Duration.ofSeconds(30))));
        AccessRecorder rec = new AccessRecorder(layer.manifest.digest(), Duration.ofSeconds(60), clock);
        r.record(rec);
        r.read(5 * 1024, ByteBuffer.allocate(10));
        r.read(1000, ByteBuffer.allocate(100)); // chunks 0 and 1
        r.read(5 * 1024, ByteBuffer.allocate(10));
        clock.advance(Duration.ofMinutes(2));
        r.read(7 * 1024, ByteBuffer.allocate(10));
        assertThat(rec.trace()).containsExactly(5, 0, 1);
    }

    @Test
    void prefetcherFetchesTheTraceInOrder() throws Exception {
        TestLayer layer = new TestLayer(store, 10 * 1024, 1024, 2);
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(4, 2,
            Duration.ofSeconds(30))));
        cache.put(layer.manifest.chunks().get(2), layer.chunk(2)); // already cached: skipped
        LayerStatsCollector stats = new LayerStatsCollector(layer.manifest.digest(), layer.image.length);
        AccessTrace trace = new AccessTrace(layer.manifest.digest(), List.of(7, 2, 0, 99, 5, 3));
        Prefetcher p = closing(new Prefetcher(fetcher, layer.manifest, trace, 1, stats));
        p.start().completion().get();
        assertThat(store.getOrder).containsExactly(layer.key(7), layer.key(0), layer.key(5), layer.key(3));
        for (int i : List.of(7, 2, 0, 5, 3)) {
            assertThat(cache.readAll(layer.manifest.chunks().get(i))).contains(layer.chunk(i));
        }
        assertThat(stats.snapshot().prefetchedChunks()).isEqualTo(4);
    }

    @Test
    void prefetchDoesNotBlockDemandReads() throws Exception {
        TestLayer layer = new TestLayer(store, 16 * 1024, 1024, 3);
        Set<String> slow = Set.of(layer.key(0), layer.key(1), layer.key(2), layer.key(3));
        CountDownLatch prefetchEntered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            if (slow.contains(key)) {
                prefetchEntered.countDown();
                release.await();
            }
            return bytes;
        };
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        // Two slots, of which prefetches may take one.
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(2, 1,
            Duration.ofSeconds(30))));
        OnDemandLayerReader r = closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(0, Duration.ofSeconds(30))));
        Prefetcher p;
        try {
            p = r.prefetch(new AccessTrace(layer.manifest.digest(), List.of(0, 1, 2, 3)), 4);
            assertThat(prefetchEntered.await(30, TimeUnit.SECONDS)).isTrue();
            // Prefetches are stuck in the store; demand reads of other chunks still go through.
            for (int i = 8; i < 12; i++) {
                ByteBuffer buf = ByteBuffer.allocate(1024);
                r.read(i * 1024L, buf);
                assertThat(buf.array()).isEqualTo(layer.chunk(i));
            }
            assertThat(p.completion()).isNotDone();
        } finally {
            release.countDown();
        }
        p.completion().get();
        assertThat(store.getOrder.subList(0, 1)).containsExactly(layer.key(0));
        for (int i = 0; i < 4; i++) {
            assertThat(cache.contains(layer.manifest.chunks().get(i))).isTrue();
        }
        LayerFetchStats s = r.stats();
        assertThat(s.prefetchedChunks()).isEqualTo(4);
        assertThat(s.fetches()).isEqualTo(8);
        assertThat(s.chunkMisses()).isEqualTo(4);
    }

    @Test
    void demandReadOfAQueuedPrefetchJumpsTheQueue() throws Exception {
        TestLayer layer = new TestLayer(store, 8 * 1024, 1024, 4);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            if (key.equals(layer.key(0))) {
                entered.countDown();
                release.await();
            }
            return bytes;
        };
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(2, 1,
            Duration.ofSeconds(30))));
        OnDemandLayerReader r = closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(0, Duration.ofSeconds(30))));
        Prefetcher p;
        try {
            // Parallelism 2, one prefetch slot: chunk 0 runs (and blocks), chunk 5 waits in the prefetch queue.
            p = r.prefetch(new AccessTrace(layer.manifest.digest(), List.of(0, 5)), 2);
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            ByteBuffer buf = ByteBuffer.allocate(1024);
            r.read(5 * 1024L, buf); // joins the queued prefetch and moves it to the demand queue
            assertThat(buf.array()).isEqualTo(layer.chunk(5));
            assertThat(store.getsOf(layer.key(5))).isEqualTo(1);
        } finally {
            release.countDown();
        }
        p.completion().get();
        assertThat(store.gets.get()).isEqualTo(2);
    }

    @Test
    void closingStopsThePrefetcher() throws Exception {
        TestLayer layer = new TestLayer(store, 8 * 1024, 1024, 5);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            entered.countDown();
            release.await();
            return bytes;
        };
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(2, 1,
            Duration.ofSeconds(30))));
        OnDemandLayerReader r = new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(0, Duration.ofSeconds(30)));
        Prefetcher p = r.prefetch(new AccessTrace(layer.manifest.digest(), List.of(0, 1, 2, 3, 4, 5, 6, 7)), 1);
        try {
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            r.close();
            assertThat(p.completion()).isDone();
        } finally {
            release.countDown();
        }
        // Wait for the fetch that was running; the closed prefetcher must not start another.
        fetcher.fetch("l", layer.manifest.chunks().get(0), ChunkFetcher.Priority.DEMAND, r.statsCollector()).get();
        assertThat(store.gets.get()).isEqualTo(1);
    }
}
