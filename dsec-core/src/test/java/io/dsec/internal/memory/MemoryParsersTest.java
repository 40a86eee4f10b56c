package io.dsec.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MemoryParsersTest {
    private static final String PSI = """
        some avg10=1.25 avg60=0.50 avg300=0.10 total=603018
        full avg10=0.75 avg60=0.20 avg300=0.00 total=537887
        """;
    private static final String MEMINFO = """
        MemTotal:       24576000 kB
        MemFree:        20000000 kB
        MemAvailable:   22000000 kB
        Buffers:          100000 kB
        Cached:          1500000 kB
        Dirty:               128 kB
        HugePages_Total:       0
        """;
    private static final String V1_STAT = """
        cache 70254592
        rss 2162688
        shmem 0
        inactive_file 67108864
        active_file 3145728
        hierarchical_memory_limit 268435456
        total_cache 70254592
        total_rss 2162688
        total_shmem 0
        total_inactive_anon 0
        total_active_anon 2162688
        total_inactive_file 67108864
        total_active_file 3145728
        """;

    @Test
    void parsesPsi() {
        Map<String, MemoryPressure.Psi> psi = MemoryPressure.parsePsi(PSI);
        assertThat(psi.get("some")).isEqualTo(new MemoryPressure.Psi(1.25, 0.50, 0.10, 603018));
        assertThat(psi.get("full")).isEqualTo(new MemoryPressure.Psi(0.75, 0.20, 0.00, 537887));
    }

    @Test
    void parsesMeminfoInBytes() {
        MemoryPressure.MemInfo m = MemoryPressure.parseMeminfo(MEMINFO);
        assertThat(m).isEqualTo(new MemoryPressure.MemInfo(24576000L * 1024, 22000000L * 1024, 1500000L * 1024, 128L * 1024));
        assertThat(MemoryPressure.parseMeminfo("MemTotal: 1 kB\n").availableBytes()).isEqualTo(-1);
    }

    @Test
    void saysWhenPsiIsAbsent(@TempDir Path dir) throws IOException {
        Path meminfo = Files.writeString(dir.resolve("meminfo"), MEMINFO);
        MemoryPressure absent = new MemoryPressure(dir.resolve("no-pressure"), meminfo);
        assertThat(absent.psiAvailable()).isFalse();
        MemoryPressure.Reading r = absent.read();
        assertThat(r.psiAvailable()).isFalse();
        assertThat(r.some().avg10()).isNaN();
        assertThat(r.memInfo().totalBytes()).isEqualTo(24576000L * 1024);

        MemoryPressure present = new MemoryPressure(Files.writeString(dir.resolve("memory"), PSI), meminfo);
        assertThat(present.read().full().avg10()).isEqualTo(0.75);
    }

    @Test
    void v1TargetTakesInactiveFileButNeverGoesBelowWhatIsNotCache() {
        Map<String, Long> stat = PageCacheReclaimer.parseStat(V1_STAT);
        assertThat(stat).containsEntry("total_inactive_file", 67108864L).containsEntry("total_rss", 2162688L);
        long usage = 2162688L + 70254592L + (1L << 20); // anon + cache + 1 MiB kernel memory
        // Usage minus inactive file would leave only 3 MiB above what is not cache: the floor (that plus the margin) wins.
        assertThat(PageCacheReclaimer.v1Target(usage, stat)).isEqualTo(usage - 70254592L + PageCacheReclaimer.V1_MARGIN);
        // Much active page cache: usage minus the inactive file bytes is above the floor and is the target.
        Map<String, Long> busy = Map.of("total_inactive_file", 40L << 20, "total_cache", 100L << 20, "total_rss", 10L << 20);
        assertThat(PageCacheReclaimer.v1Target(111L << 20, busy)).isEqualTo(71L << 20);
    }

    @Test
    void knowsWhenTheKernelJustCouldNotReclaimAll() {
        assertThat(PageCacheReclaimer.couldNotReclaimAll(new IOException("Device or resource busy"))).isTrue();
        assertThat(PageCacheReclaimer.couldNotReclaimAll(new IOException("/x: Resource temporarily unavailable"))).isTrue();
        assertThat(PageCacheReclaimer.couldNotReclaimAll(new IOException("Permission denied"))).isFalse();
    }

    @Test
    void coldMemoryStatusSaysWhetherDamonIsThere(@TempDir Path dir) throws IOException {
        assertThat(ColdMemory.probe(dir.resolve("missing")).damonAvailable()).isFalse();
        ColdMemory there = ColdMemory.probe(Files.createDirectories(dir.resolve("admin")));
        assertThat(there.damonAvailable()).isTrue();
        assertThat(there.detail()).contains("DAMON is available");
    }
}
