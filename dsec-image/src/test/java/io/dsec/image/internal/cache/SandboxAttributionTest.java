package io.dsec.image.internal.cache;

import io.dsec.image.testing.MemoryBlobStore;
import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.image.SandboxFetchStats;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SandboxAttributionTest {
    private static final String A = "sb-abcdefghijkl";
    private static final String B = "sb-234567abcdef";

    @TempDir
    Path dir;

    private final MemoryBlobStore store = new MemoryBlobStore();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Map<Integer, String> pids = new ConcurrentHashMap<>();
    private final AtomicInteger lookups = new AtomicInteger();
    private final AtomicLong nanos = new AtomicLong();

    @AfterEach
    void close() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private SandboxAttribution attribution() {
        return new SandboxAttribution(pid -> {
            lookups.incrementAndGet();
            return pids.get(pid);
        }, Duration.ofSeconds(3), Duration.ofHours(1), 100, nanos::get);
    }

    @Test
    void findsTheSandboxInCgroupPathsOfBothHierarchies() {
        assertThat(SandboxAttribution.sandboxOfCgroups("0::/dsec/" + A + "\n")).isEqualTo(A);
        assertThat(SandboxAttribution.sandboxOfCgroups("""
            10:hugetlb:/
            4:memory:/process_api/8f442b/dsec/%s
            0::/
            """.formatted(B))).isEqualTo(B);
        assertThat(SandboxAttribution.sandboxOfCgroups("0::/dsec/" + A + "/inner\n")).isEqualTo(A);
        assertThat(SandboxAttribution.sandboxOfCgroups("0::/user.slice/session-1.scope\n")).isNull();
        assertThat(SandboxAttribution.sandboxOfCgroups("0::/dsec/" + A + "x\n")).as("not a whole id").isNull();
        assertThat(SandboxAttribution.sandboxOfCgroups("0::/dsec/sb-ABCDEFGHIJKL\n")).isNull();
        assertThat(SandboxAttribution.sandboxOfProcess((int) ProcessHandle.current().pid()))
            .as("this JVM runs in no sandbox").isNull();
    }

    @Test
    void cachesThePidsSandboxForAFewSeconds() {
        SandboxAttribution sandboxes = attribution();
        pids.put(100, A);
        SandboxStatsCollector a = sandboxes.forPid(100);
        assertThat(a.sandboxId()).isEqualTo(A);
        assertThat(sandboxes.forPid(100)).isSameAs(a);
        assertThat(sandboxes.forPid(200)).isNull();
        assertThat(sandboxes.forPid(200)).isNull();
        assertThat(sandboxes.forPid(0)).as("unknown pid").isNull();
        assertThat(lookups.get()).isEqualTo(2);

        pids.put(200, A);
        nanos.addAndGet(Duration.ofSeconds(4).toNanos());
        assertThat(sandboxes.forPid(200)).as("a new answer after the pid entry expires").isSameAs(a);
        assertThat(lookups.get()).isEqualTo(3);
    }

    @Test
    void readsCountForTheSandboxOfTheRequestingPid() throws Exception {
        TestLayer layer = new TestLayer(store, 8 * 1024, 1024, 3);
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(4, 2, Duration.ofSeconds(30))));
        SandboxAttribution sandboxes = attribution();
        OnDemandLayerReader reader = closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(0, Duration.ofSeconds(30)), sandboxes));
        pids.put(10, A);
        pids.put(20, B);

        read(reader, 0, 2048, 10);     // A: two misses, fetched for A
        read(reader, 1024, 2048, 20);  // B: one hit (chunk 1), one miss (chunk 2)
        read(reader, 4096, 1024, 30);  // no sandbox: a miss for the layer only
        read(reader, 0, 1024, 0);      // unknown pid: a hit for the layer only

        SandboxFetchStats a = sandboxes.stats(A).orElseThrow();
        assertThat(a.sandboxId()).isEqualTo(A);
        assertThat(a.reads()).isEqualTo(1);
        assertThat(a.bytesRead()).isEqualTo(2048);
        assertThat(a.chunkMisses()).isEqualTo(2);
        assertThat(a.chunkHits()).isZero();
        assertThat(a.fetches()).isEqualTo(2);
        assertThat(a.bytesFetched()).isEqualTo(2048);
        assertThat(a.layers()).isEqualTo(1);
        assertThat(a.imageBytes()).isEqualTo(8 * 1024);

        SandboxFetchStats b = sandboxes.stats(B).orElseThrow();
        assertThat(b.chunkHits()).isEqualTo(1);
        assertThat(b.chunkMisses()).isEqualTo(1);
        assertThat(b.bytesFetched()).isEqualTo(1024);
        assertThat(b.bytesRead()).isEqualTo(2048);

        LayerFetchStats l = reader.stats();
        assertThat(l.chunkMisses()).isEqualTo(4);
        assertThat(l.chunkHits()).isEqualTo(2);
        assertThat(l.bytesFetched()).isEqualTo(4096);
        assertThat(sandboxes.stats("sb-nothingreadx")).isEmpty();
    }

    @Test
    void readAheadOfASandboxesSequentialReadIsFetchedOnItsBehalf() throws Exception {
        TestLayer layer = new TestLayer(store, 16 * 1024, 1024, 5);
        ChunkCache cache = closing(new ChunkCache(dir, 1 << 20));
        ChunkFetcher fetcher = closing(new ChunkFetcher(store, cache, new ChunkFetcher.Config(4, 2, Duration.ofSeconds(30))));
        SandboxAttribution sandboxes = attribution();
        OnDemandLayerReader reader = closing(new OnDemandLayerReader(layer.manifest, cache, fetcher,
            new OnDemandLayerReader.Config(2, Duration.ofSeconds(30)), sandboxes));
        pids.put(10, A);
        read(reader, 0, 1024, 10);
        read(reader, 1024, 1024, 10); // sequential: chunks 2 and 3 are read ahead
        reader.readAheadIdle().get();
        SandboxFetchStats a = sandboxes.stats(A).orElseThrow();
        assertThat(a.prefetchedChunks()).isEqualTo(2);
        assertThat(a.bytesFetched()).isEqualTo(4 * 1024);
    }

    private static void read(OnDemandLayerReader r, long offset, int len, int pid) throws Exception {
        ByteBuffer buf = ByteBuffer.allocate(len);
        r.read(offset, buf, pid);
        assertThat(buf.position()).isEqualTo(len);
    }

    private <T extends AutoCloseable> T closing(T t) {
        closeables.add(t);
        return t;
    }
}
