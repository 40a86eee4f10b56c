package io.dsec.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.ExecResult;
import io.dsec.MemoryStats;
import io.dsec.OciRuntime;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.internal.host.ContainerSandboxHost;
import io.dsec.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Page cache reclaim on a real sandbox: its cgroup holds a 64 MiB file's page cache, reclaim frees it, nothing else changes. */
class PageCacheReclaimIT {

    @Test
    void reclaimsASandboxsPageCacheAndLeavesItsLimitAndFilesAlone() throws Exception {
        try (TestHost t = TestHost.start(OciRuntime.AUTO);
             Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("256m"))) {
            ExecResult wrote = sb.exec("sh", "-c", "dd if=/dev/urandom of=/big bs=1M count=64 conv=fsync 2>/dev/null"
                + " && cat /big > /dev/null && md5sum /big");
            assertThat(wrote.exitCode()).as(wrote.stderrText()).isZero();
            String md5 = wrote.stdoutText();

            List<Path> dirs = ((ContainerSandboxHost) t.host).cgroups().cgroupDirs("/dsec/" + sb.id());
            Path v2 = dirs.stream().filter(d -> Files.exists(d.resolve("memory.reclaim"))).findFirst().orElse(null);
            Path v1 = dirs.stream().filter(d -> Files.exists(d.resolve("memory.limit_in_bytes"))).findFirst().orElse(null);
            assertThat(v2 != null || v1 != null).as("a memory cgroup among " + dirs).isTrue();
            Path usageFile = v2 != null ? v2.resolve("memory.current") : v1.resolve("memory.usage_in_bytes");
            Path limitFile = v2 != null ? v2.resolve("memory.max") : v1.resolve("memory.limit_in_bytes");
            String limitBefore = Files.readString(limitFile);
            long usageBefore = Long.parseLong(Files.readString(usageFile).trim());

            long reclaimed = t.host.reclaimPageCache(sb);

            assertThat(reclaimed).isPositive();
            assertThat(Long.parseLong(Files.readString(usageFile).trim())).isLessThan(usageBefore);
            assertThat(Files.readString(limitFile)).isEqualTo(limitBefore);
            assertThat(sb.exec("echo", "ok").stdoutText()).isEqualTo("ok\n");
            assertThat(sb.exec("md5sum", "/big").stdoutText()).isEqualTo(md5);

            MemoryStats stats = t.host.memory();
            assertThat(stats.reclaimedBytes()).isGreaterThanOrEqualTo(reclaimed);
            assertThat(stats.memTotalBytes()).isPositive();
            assertThat(stats.memAvailableBytes()).isPositive().isLessThanOrEqualTo(stats.memTotalBytes());
            assertThat(stats.psiAvailable()).isEqualTo(Files.isReadable(Path.of("/proc/pressure/memory")));
            assertThat(stats.psiAvailable() ? !Double.isNaN(stats.psiSomeAvg10()) : Double.isNaN(stats.psiSomeAvg10())).isTrue();
            assertThat(stats.damonAvailable()).isEqualTo(Files.isDirectory(ColdMemory.DAMON_ADMIN));
        }
    }
}
