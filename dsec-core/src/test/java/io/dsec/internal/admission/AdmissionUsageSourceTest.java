package io.dsec.internal.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Capacity and real use as KernelUsageSource reads them from /proc and cgroup files (fed from a temp dir). */
class AdmissionUsageSourceTest {
    @TempDir
    Path tmp;

    private KernelUsageSource source() throws IOException {
        Path proc = Files.createDirectories(tmp.resolve("proc"));
        Files.createDirectories(proc.resolve("sys/kernel"));
        Files.writeString(proc.resolve("meminfo"), "MemTotal:       24684092 kB\nMemFree:        23568000 kB\n"
            + "MemAvailable:   20000000 kB\nBuffers:          1000 kB\n");
        Files.writeString(proc.resolve("sys/kernel/pid_max"), "32768\n");
        Files.writeString(proc.resolve("sys/kernel/threads-max"), "190000\n");
        return new KernelUsageSource(proc, tmp);
    }

    @Test
    void readsCapacityAndHostUseFromProc() throws IOException {
        KernelUsageSource s = source();
        UsageSource.Capacity c = s.capacity();
        assertThat(c.memoryBytes()).isEqualTo(24684092L * 1024);
        assertThat(c.pids()).isEqualTo(32768);
        assertThat(c.cpus()).isEqualTo(Runtime.getRuntime().availableProcessors());
        assertThat(c.diskBytes()).isPositive();
        UsageSource.HostUse h = s.host();
        assertThat(h.memoryUsedBytes()).isEqualTo((24684092L - 20000000L) * 1024);
        assertThat(h.diskFreeBytes()).isPositive().isLessThanOrEqualTo(c.diskBytes());
    }

    @Test
    void readsAV1SandboxWithoutItsInactiveFileCache() throws IOException {
        Path memory = Files.createDirectories(tmp.resolve("memory/dsec/sb"));
        Path cpuacct = Files.createDirectories(tmp.resolve("cpu,cpuacct/dsec/sb"));
        Files.writeString(memory.resolve("memory.usage_in_bytes"), "104857600\n");
        Files.writeString(memory.resolve("memory.stat"), "cache 50000000\ninactive_file 1\ntotal_inactive_file 4857600\n");
        Files.writeString(cpuacct.resolve("cpu.stat"), "nr_periods 3\nnr_throttled 0\nthrottled_time 0\n");
        Files.writeString(cpuacct.resolve("cpuacct.usage"), "123456789\n");
        UsageSource.SandboxUse u = source().sandbox(List.of(tmp.resolve("blkio/dsec/sb"), cpuacct, memory));
        assertThat(u.memoryBytes()).isEqualTo(100_000_000);
        assertThat(u.cpuNanos()).isEqualTo(123456789);
    }

    @Test
    void readsAV2Sandbox() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("unified/dsec/sb"));
        Files.writeString(dir.resolve("memory.current"), "20000000\n");
        Files.writeString(dir.resolve("memory.stat"), "anon 15000000\nfile 5000000\nactive_file 0\ninactive_file 4000000\n");
        Files.writeString(dir.resolve("cpu.stat"), "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
        UsageSource.SandboxUse u = source().sandbox(List.of(dir));
        assertThat(u.memoryBytes()).isEqualTo(16_000_000);
        assertThat(u.cpuNanos()).isEqualTo(2_500_000);
    }

    @Test
    void aSandboxWhoseCgroupsAreGoneReadsAsNull() throws IOException {
        assertThat(source().sandbox(List.of(tmp.resolve("nope")))).isNull();
    }

    @Test
    void readsThisHost() {
        KernelUsageSource s = new KernelUsageSource(tmp);
        assertThat(s.capacity().memoryBytes()).isPositive();
        // read whole: Files.readString gets only the first byte of /proc/sys files on some kernels
        assertThat(s.capacity().pids()).isGreaterThanOrEqualTo(300);
        assertThat(s.host().memoryUsedBytes()).isPositive().isLessThan(s.capacity().memoryBytes());
    }
}
