package io.dsec.internal.oci;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CgroupLayoutTest {
    @TempDir
    Path tmp;

    @Test
    void recognisesHybridAndWhetherCrunAcceptsIt() throws Exception {
        Path unified = Files.createDirectories(tmp.resolve("unified"));
        Files.writeString(unified.resolve("cgroup.controllers"), "hugetlb\n");
        Path mountinfo = tmp.resolve("mountinfo");
        Files.writeString(mountinfo, String.join("\n",
            "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:10 - cgroup cgroup rw,memory",
            "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:11 - cgroup cgroup rw,cpu",
            "32 25 0:28 / " + unified + " rw,relatime shared:12 - cgroup2 cgroup2 rw",
            "33 1 8:1 / / rw,relatime - ext4 /dev/vda rw", ""));
        CgroupLayout layout = CgroupLayout.parse(mountinfo);
        assertThat(layout.mode()).isEqualTo(CgroupLayout.Mode.HYBRID);
        assertThat(layout.crunRefuses()).isTrue();
        assertThat(layout.cgroupDirs("/dsec/sb-1")).contains(Path.of("/sys/fs/cgroup/memory/dsec/sb-1"), unified.resolve("dsec/sb-1"));

        Files.writeString(unified.resolve("cgroup.controllers"), "");
        assertThat(CgroupLayout.parse(mountinfo).crunRefuses()).isFalse();
    }

    @Test
    void recognisesV2Only() throws Exception {
        Path v2 = Files.createDirectories(tmp.resolve("cg"));
        Files.writeString(v2.resolve("cgroup.controllers"), "cpu memory pids\n");
        Path mountinfo = tmp.resolve("mountinfo");
        Files.writeString(mountinfo, "32 25 0:28 / " + v2 + " rw,relatime shared:12 - cgroup2 cgroup2 rw\n");
        CgroupLayout layout = CgroupLayout.parse(mountinfo);
        assertThat(layout.mode()).isEqualTo(CgroupLayout.Mode.V2);
        assertThat(layout.crunRefuses()).isFalse();
        assertThat(layout.v2Controllers()).containsExactly("cpu", "memory", "pids");
    }
}
