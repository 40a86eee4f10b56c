package io.dsec.internal.oci;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.MissingPrerequisiteException;
import io.dsec.OciRuntime;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class RuntimeSelectorTest {
    private static final CgroupLayout V2 = new CgroupLayout(List.of(), Path.of("/sys/fs/cgroup"), List.of("cpu", "memory", "pids"));
    private static final CgroupLayout HYBRID_WITH_HUGETLB = new CgroupLayout(List.of(Path.of("/sys/fs/cgroup/memory")),
        Path.of("/sys/fs/cgroup/unified"), List.of("hugetlb"));
    private final ObjectMapper mapper = new ObjectMapper();

    private static Function<String, Optional<Path>> installed(String... tools) {
        Map<String, Path> found = new java.util.HashMap<>();
        for (String t : tools) {
            found.put(t, Path.of("/usr/bin", t));
        }
        return t -> Optional.ofNullable(found.get(t));
    }

    private OciRuntimeCli select(OciRuntime wanted, CgroupLayout layout, Function<String, Optional<Path>> which) {
        return RuntimeSelector.select(wanted, layout, Path.of("/state/runtime"), mapper, which);
    }

    @Test
    void autoPrefersCrunWhereItWorks() {
        OciRuntimeCli cli = select(OciRuntime.AUTO, V2, installed("crun", "runc"));
        assertThat(cli.name()).isEqualTo("crun");
        assertThat(cli.stateRoot()).isEqualTo(Path.of("/state/runtime/crun"));
    }

    @Test
    void autoFallsBackToRuncOnAHybridHostCrunRefuses() {
        assertThat(select(OciRuntime.AUTO, HYBRID_WITH_HUGETLB, installed("crun", "runc")).name()).isEqualTo("runc");
    }

    @Test
    void askingForCrunWhereItCannotRunSaysHowToFixIt() {
        assertThatThrownBy(() -> select(OciRuntime.CRUN, HYBRID_WITH_HUGETLB, installed("crun", "runc")))
            .isInstanceOf(MissingPrerequisiteException.class)
            .hasMessageContaining("mount -t cgroup -o hugetlb").hasMessageContaining("OciRuntime.RUNC");
    }

    @Test
    void missingRuntimesNameThePackages() {
        assertThatThrownBy(() -> select(OciRuntime.AUTO, V2, installed()))
            .isInstanceOf(MissingPrerequisiteException.class).hasMessageContaining("apt-get install crun runc");
        assertThatThrownBy(() -> select(OciRuntime.RUNC, V2, installed("crun")))
            .hasMessageContaining("apt-get install runc");
        assertThatThrownBy(() -> select(OciRuntime.CRUN, V2, installed("runc")))
            .hasMessageContaining("apt-get install crun");
    }
}
