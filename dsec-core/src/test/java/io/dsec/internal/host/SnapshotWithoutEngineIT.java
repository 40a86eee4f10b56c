package io.dsec.internal.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.InvalidSpecException;
import io.dsec.OciRuntime;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.SnapshotException;
import io.dsec.SnapshotMode;
import io.dsec.testing.TestHost;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** dsec-core alone has no snapshot engine: snapshots fail with a message naming the module to add. */
class SnapshotWithoutEngineIT {
    @Test
    void snapshotsNeedTheSnapshotModule() {
        try (TestHost t = TestHost.start(OciRuntime.AUTO); Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("64m"))) {
            assertThatThrownBy(sb::snapshot).isInstanceOf(SnapshotException.class).hasMessageContaining("io.dsec:dsec-snapshot");
            assertThatThrownBy(() -> t.host.snapshots()).isInstanceOf(SnapshotException.class).hasMessageContaining("io.dsec:dsec-snapshot");
            assertThatThrownBy(() -> t.host.branch("snap-0000000000000000", 1)).isInstanceOf(SnapshotException.class)
                .hasMessageContaining("io.dsec:dsec-snapshot");
            // Checks that need no engine come first.
            assertThatThrownBy(() -> sb.snapshot(SnapshotMode.MEMORY, Map.of())).isInstanceOf(SnapshotException.class)
                .hasMessageContaining("microVM");
            assertThatThrownBy(() -> t.host.branch((io.dsec.Snapshot) null, 0)).isInstanceOf(InvalidSpecException.class);
            assertThat(sb.exec("true").exitCode()).isZero();
        }
    }
}
