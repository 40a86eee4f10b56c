package io.dsec.image.internal.cache;

import io.dsec.image.testing.MutableClock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChunkCacheTest {
    @TempDir
    Path dir;

    private final MutableClock clock = new MutableClock(Instant.parse("2025-01-01T00:00:00Z"));

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private ChunkCache open(long budget) {
        return new ChunkCache(dir, budget, clock, Duration.ZERO);
    }

    private String put(ChunkCache cache, byte[] b) throws IOException {
        String hex = ChunkCache.sha256Hex(b);
        cache.put(hex, b);
        clock.advance(Duration.ofSeconds(1));
        return hex;
    }

    private static byte[] read(ChunkCache cache, String hex, int from, int len) throws IOException {
        try (ChunkCache.Chunk c = cache.open(hex).orElseThrow()) {
            ByteBuffer buf = ByteBuffer.allocate(len);
            c.read(from, buf);
            assertThat(buf.hasRemaining()).isFalse();
            return buf.array();
        }
    }

    @Test
    void putThenReadRanges() throws IOException {
        try (ChunkCache cache = open(10_000)) {
            byte[] b = bytes(1000, 1);
            String hex = put(cache, b);
            assertThat(cache.contains(hex)).isTrue();
            assertThat(read(cache, hex, 100, 50)).isEqualTo(java.util.Arrays.copyOfRange(b, 100, 150));
            assertThat(cache.readAll(hex)).contains(b);
            assertThat(cache.open(ChunkCache.sha256Hex(bytes(10, 2)))).isEmpty();
            assertThat(cache.usedBytes()).isEqualTo(1000);
            assertThat(Files.readAllBytes(dir.resolve("chunks").resolve(hex))).isEqualTo(b);
        }
    }

    @Test
    void evictsLeastRecentlyUsedWithinBudget() throws IOException {
        try (ChunkCache cache = open(3000)) {
            String a = put(cache, bytes(1000, 1));
            String b = put(cache, bytes(1000, 2));
            String c = put(cache, bytes(1000, 3));
            read(cache, a, 0, 10); // a is now most recently used: b is the eldest
            String d = put(cache, bytes(1000, 4));
            assertThat(cache.usedBytes()).isEqualTo(3000);
            assertThat(cache.lruOrder()).containsExactly(c, a, d);
            assertThat(cache.contains(b)).isFalse();
            assertThat(dir.resolve("chunks").resolve(b)).doesNotExist();
            String e = put(cache, bytes(1500, 5)); // needs two evictions
            assertThat(cache.lruOrder()).containsExactly(d, e);
            assertThat(cache.usedBytes()).isLessThanOrEqualTo(3000);
            assertThat(cache.evictions()).isEqualTo(3);
        }
    }

    @Test
    void leasedChunksAreNotEvicted() throws IOException {
        try (ChunkCache cache = open(2000)) {
            String a = put(cache, bytes(1000, 1));
            String b = put(cache, bytes(1000, 2));
            try (ChunkCache.Chunk lease = cache.open(a).orElseThrow()) {
                read(cache, b, 0, 1); // b most recent, but a is leased
                String c = put(cache, bytes(1000, 3));
                assertThat(cache.lruOrder()).containsExactly(a, c);
                ByteBuffer buf = ByteBuffer.allocate(1000);
                lease.read(0, buf);
                assertThat(buf.array()).isEqualTo(bytes(1000, 1));
            }
        }
    }

    @Test
    void indexSurvivesReopenInLruOrder() throws IOException {
        String a;
        String b;
        String c;
        try (ChunkCache cache = open(3000)) {
            a = put(cache, bytes(1000, 1));
            b = put(cache, bytes(1000, 2));
            c = put(cache, bytes(1000, 3));
            read(cache, a, 0, 1); // touches a's mtime (touch interval zero)
            clock.advance(Duration.ofSeconds(1));
        }
        try (ChunkCache cache = open(3000)) {
            assertThat(cache.chunkCount()).isEqualTo(3);
            assertThat(cache.usedBytes()).isEqualTo(3000);
            assertThat(cache.lruOrder()).containsExactly(b, c, a);
            assertThat(cache.readAll(a)).contains(bytes(1000, 1));
            String d = put(cache, bytes(1000, 4));
            assertThat(cache.contains(b)).isFalse();
            assertThat(cache.lruOrder()).containsExactly(c, a, d);
        }
        try (ChunkCache cache = open(1500)) { // a smaller budget evicts down to it on open
            assertThat(cache.usedBytes()).isLessThanOrEqualTo(1500);
            assertThat(cache.chunkCount()).isEqualTo(1);
        }
    }

    @Test
    void corruptFileFoundOnOpenIsDetectedAndDropped() throws IOException {
        String a;
        try (ChunkCache cache = open(3000)) {
            a = put(cache, bytes(1000, 1));
        }
        byte[] bad = bytes(1000, 1);
        bad[500] ^= 1;
        Files.write(dir.resolve("chunks").resolve(a), bad);
        Files.write(dir.resolve("tmp").resolve("leftover.tmp"), bad);
        Files.write(dir.resolve("chunks").resolve("not-a-chunk"), bad);
        try (ChunkCache cache = open(3000)) {
            assertThat(dir.resolve("tmp").resolve("leftover.tmp")).doesNotExist();
            assertThat(cache.chunkCount()).isEqualTo(1);
            try (ChunkCache.Chunk c = cache.open(a).orElseThrow()) {
                assertThatThrownBy(() -> c.read(0, ByteBuffer.allocate(10))).isInstanceOf(IOException.class)
                    .hasMessageContaining("corrupt");
                c.invalidate();
            }
            assertThat(cache.contains(a)).isFalse();
            assertThat(cache.usedBytes()).isZero();
            assertThat(dir.resolve("chunks").resolve(a)).doesNotExist();
        }
    }

    @Test
    void missingFileIsAReadErrorNotACrash() throws IOException {
        try (ChunkCache cache = open(3000)) {
            String a = put(cache, bytes(1000, 1));
            Files.delete(dir.resolve("chunks").resolve(a));
            assertThat(cache.readAll(a)).isEmpty();
            assertThat(cache.contains(a)).isFalse();
        }
    }

    @Test
    void chunkLargerThanBudgetFailsCleanly() throws IOException {
        try (ChunkCache cache = open(500)) {
            byte[] b = bytes(1000, 1);
            String hex = ChunkCache.sha256Hex(b);
            assertThatThrownBy(() -> cache.put(hex, b)).isInstanceOf(ChunkCacheException.class)
                .hasMessageContaining("more than the whole cache budget");
            assertThat(cache.contains(hex)).isFalse();
            assertThat(cache.usedBytes()).isZero();
            assertNothingOnDisk();
        }
    }

    @Test
    void budgetFullOfLeasedChunksFailsCleanly() throws IOException {
        try (ChunkCache cache = open(1500)) {
            String a = put(cache, bytes(1000, 1));
            byte[] b = bytes(1000, 2);
            String hb = ChunkCache.sha256Hex(b);
            try (ChunkCache.Chunk lease = cache.open(a).orElseThrow()) {
                assertThatThrownBy(() -> cache.put(hb, b)).isInstanceOf(ChunkCacheException.class)
                    .hasMessageContaining("is full");
            }
            assertThat(cache.contains(hb)).isFalse();
            assertThat(dir.resolve("chunks").resolve(hb)).doesNotExist();
            assertThat(Files.list(dir.resolve("tmp")).count()).isZero();
            cache.put(hb, b); // with the lease gone, a is evicted
            assertThat(cache.lruOrder()).containsExactly(hb);
        }
    }

    @Test
    void oneCachePerDirectory() {
        try (ChunkCache cache = open(1000)) {
            assertThatThrownBy(() -> open(1000)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("in use");
        }
        open(1000).close();
    }

    @Test
    void closeIsIdempotentAndStopsService() throws IOException {
        ChunkCache cache = open(3000);
        String a = put(cache, bytes(100, 1));
        cache.close();
        cache.close();
        assertThat(cache.open(a)).isEqualTo(Optional.empty());
        assertThatThrownBy(() -> cache.put(a, bytes(100, 1))).isInstanceOf(ChunkCacheException.class);
    }

    private void assertNothingOnDisk() throws IOException {
        try (var s = Files.list(dir.resolve("chunks"))) {
            assertThat(s.count()).isZero();
        }
        try (var s = Files.list(dir.resolve("tmp"))) {
            assertThat(s.count()).isZero();
        }
    }
}
