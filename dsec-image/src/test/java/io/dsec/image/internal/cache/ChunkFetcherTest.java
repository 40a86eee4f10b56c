package io.dsec.image.internal.cache;

import io.dsec.image.testing.MemoryBlobStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ChunkFetcherTest {
    @TempDir
    Path dir;

    private final MemoryBlobStore store = new MemoryBlobStore();
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

    private ChunkCache cache(long budget) {
        return closing(new ChunkCache(dir, budget));
    }

    private ChunkFetcher fetcher(ChunkCache cache, int max, int maxPrefetch, Duration timeout) {
        return closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(max, maxPrefetch, timeout)));
    }

    @Test
    void fetchesVerifiesAndCaches() throws Exception {
        TestLayer layer = new TestLayer(store, 4000, 1000, 1);
        ChunkCache cache = cache(1 << 20);
        ChunkFetcher fetcher = fetcher(cache, 4, 1, Duration.ofSeconds(30));
        LayerStatsCollector stats = new LayerStatsCollector(layer.manifest.digest(), 4000);
        String hex = layer.manifest.chunks().get(2);
        assertThat(fetcher.fetch("l", hex, ChunkFetcher.Priority.DEMAND, stats).get()).isEqualTo(layer.chunk(2));
        assertThat(cache.readAll(hex)).contains(layer.chunk(2));
        assertThat(fetcher.prefetch("l", hex, stats)).isCompleted();
        assertThat(store.gets.get()).isEqualTo(1);
        assertThat(fetcher.inflightCount()).isZero();
        LayerFetchStats s = stats.snapshot();
        assertThat(s.fetches()).isEqualTo(1);
        assertThat(s.bytesFetched()).isEqualTo(1000);
        assertThat(s.fetchLatencyCount()).isEqualTo(1);
    }

    @Test
    void concurrencyIsBounded() throws Exception {
        TestLayer layer = new TestLayer(store, 20 * 100, 100, 2);
        int limit = 3;
        CountDownLatch entered = new CountDownLatch(limit);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            entered.countDown();
            release.await();
            return bytes;
        };
        ChunkFetcher fetcher = fetcher(cache(1 << 20), limit, 1, Duration.ofSeconds(30));
        LayerStatsCollector stats = new LayerStatsCollector("l", 2000);
        List<CompletableFuture<byte[]>> all = new ArrayList<>();
        for (String hex : layer.manifest.chunks()) {
            all.add(fetcher.fetch("l", hex, ChunkFetcher.Priority.DEMAND, stats));
        }
        for (int i = 0; i < 5; i++) {
            fetcher.prefetch("l", layer.manifest.chunks().get(i), stats);
        }
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(store.maxConcurrentGets.get()).isLessThanOrEqualTo(limit);
        release.countDown();
        for (int i = 0; i < all.size(); i++) {
            assertThat(all.get(i).get()).isEqualTo(layer.chunk(i));
        }
        assertThat(store.maxConcurrentGets.get()).isEqualTo(limit);
        assertThat(store.gets.get()).isEqualTo(20);
    }

    @Test
    void slowStoreTimesOut() throws Exception {
        TestLayer layer = new TestLayer(store, 1000, 1000, 3);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            release.await();
            return bytes;
        };
        ChunkCache cache = cache(1 << 20);
        ChunkFetcher fetcher = fetcher(cache, 2, 1, Duration.ofMillis(200));
        try {
            String hex = layer.manifest.chunks().get(0);
            CompletableFuture<byte[]> f = fetcher.fetch("l", hex, ChunkFetcher.Priority.DEMAND,
                new LayerStatsCollector("l", 1000));
            assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(ImageFetchException.class).hasMessageContaining("timed out")
                .cause().isInstanceOf(TimeoutException.class);
            assertThat(cache.contains(hex)).isFalse();
        } finally {
            release.countDown();
        }
    }

    @Test
    void corruptOnceIsFetchedAgain() throws Exception {
        TestLayer layer = new TestLayer(store, 1000, 1000, 4);
        store.hook = (key, bytes, nth) -> {
            if (nth == 1) {
                bytes[7] ^= 1;
            }
            return bytes;
        };
        ChunkCache cache = cache(1 << 20);
        ChunkFetcher fetcher = fetcher(cache, 2, 1, Duration.ofSeconds(30));
        LayerStatsCollector stats = new LayerStatsCollector("l", 1000);
        String hex = layer.manifest.chunks().get(0);
        assertThat(fetcher.fetch("l", hex, ChunkFetcher.Priority.DEMAND, stats).get()).isEqualTo(layer.chunk(0));
        assertThat(cache.readAll(hex)).contains(layer.chunk(0));
        assertThat(stats.snapshot().verificationFailures()).isEqualTo(1);
        assertThat(stats.snapshot().fetches()).isEqualTo(2);
    }

    @Test
    void corruptTwiceFailsAndCachesNothing() {
        TestLayer layer = new TestLayer(store, 1000, 1000, 5);
        store.hook = (key, bytes, nth) -> {
            bytes[7] ^= 1;
            return bytes;
        };
        ChunkCache cache = cache(1 << 20);
        ChunkFetcher fetcher = fetcher(cache, 2, 1, Duration.ofSeconds(30));
        LayerStatsCollector stats = new LayerStatsCollector("l", 1000);
        String hex = layer.manifest.chunks().get(0);
        assertThatThrownBy(() -> fetcher.fetch("sha256:layer", hex, ChunkFetcher.Priority.DEMAND, stats).get())
            .cause().isInstanceOf(ImageFetchException.class)
            .hasMessageContaining("verification twice").hasMessageContaining(hex)
            .hasMessageContaining("sha256:layer").hasMessageContaining(store.describe());
        assertThat(cache.contains(hex)).isFalse();
        assertThat(cache.chunkCount()).isZero();
        assertThat(store.gets.get()).isEqualTo(2);
        assertThat(stats.snapshot().verificationFailures()).isEqualTo(2);
    }

    @Test
    void pullAllFetchesEveryChunkOnce() {
        TestLayer layer = new TestLayer(store, 10 * 1000 + 123, 1000, 6);
        ChunkCache cache = cache(1 << 20);
        ChunkFetcher fetcher = fetcher(cache, 3, 1, Duration.ofSeconds(30));
        LayerStatsCollector stats = new LayerStatsCollector(layer.manifest.digest(), layer.image.length);
        fetcher.pullAll(layer.manifest, stats);
        for (String hex : layer.manifest.chunks()) {
            assertThat(cache.contains(hex)).isTrue();
        }
        assertThat(store.gets.get()).isEqualTo(11);
        assertThat(store.maxConcurrentGets.get()).isLessThanOrEqualTo(3);
        assertThat(stats.snapshot().prefetchedChunks()).isEqualTo(11);
        assertThat(stats.snapshot().bytesFetched()).isEqualTo(layer.image.length);
        fetcher.pullAll(layer.manifest); // all cached: no gets
        assertThat(store.gets.get()).isEqualTo(11);
    }

    @Test
    void pullAllFailsOnAMissingChunk() {
        TestLayer layer = new TestLayer(store, 5000, 1000, 7);
        store.delete(layer.key(3));
        ChunkFetcher fetcher = fetcher(cache(1 << 20), 2, 1, Duration.ofSeconds(30));
        assertThatThrownBy(() -> fetcher.pullAll(layer.manifest)).isInstanceOf(ImageFetchException.class)
            .hasMessageContaining(layer.manifest.digest()).hasRootCauseInstanceOf(BlobNotFoundException.class);
    }

    @Test
    void pullAllRefusesALayerLargerThanTheBudget() {
        TestLayer layer = new TestLayer(store, 5000, 1000, 8);
        ChunkFetcher fetcher = fetcher(cache(4000), 2, 1, Duration.ofSeconds(30));
        assertThatThrownBy(() -> fetcher.pullAll(layer.manifest)).isInstanceOf(ImageFetchException.class)
            .hasMessageContaining("budget");
        assertThat(store.gets.get()).isZero();
    }

    @Test
    void closeFailsQueuedFetchesAndIsIdempotent() throws Exception {
        TestLayer layer = new TestLayer(store, 3000, 1000, 9);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        store.hook = (key, bytes, nth) -> {
            entered.countDown();
            release.await();
            return bytes;
        };
        ChunkFetcher fetcher = new ChunkFetcher(store, cache(1 << 20), new ChunkFetcher.Config(1, 1,
            Duration.ofSeconds(30)));
        try {
            LayerStatsCollector stats = new LayerStatsCollector("l", 3000);
            CompletableFuture<byte[]> running = fetcher.fetch("l", layer.manifest.chunks().get(0),
                ChunkFetcher.Priority.DEMAND, stats);
            CompletableFuture<byte[]> queued = fetcher.fetch("l", layer.manifest.chunks().get(1),
                ChunkFetcher.Priority.DEMAND, stats);
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            fetcher.close();
            fetcher.close();
            assertThatThrownBy(queued::get).hasCauseInstanceOf(ImageFetchException.class);
            assertThatThrownBy(running::get).hasCauseInstanceOf(ImageFetchException.class);
            assertThatThrownBy(() -> fetcher.fetch("l", layer.manifest.chunks().get(2), ChunkFetcher.Priority.DEMAND,
                stats).get()).hasCauseInstanceOf(ImageFetchException.class);
        } finally {
            release.countDown();
        }
    }
}
