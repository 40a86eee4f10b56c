package io.dsec.snapshot;

import static io.dsec.snapshot.SnapshotTestSupport.dump;
import static io.dsec.snapshot.SnapshotTestSupport.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.Image;
import io.dsec.InvalidSpecException;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.Snapshot;
import io.dsec.SnapshotException;
import io.dsec.SnapshotMode;
import io.dsec.SnapshotTimings;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestHost;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Snapshots of real sandboxes, branches of them, chains, squashing, deletion and failures. */
class SnapshotIT {
    private Path dir;
    private SandboxHost host;
    private Image image;

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        host = Sandboxes.builder().stateDir(dir.resolve("state")).snapshotSquashDepth(2).build();
        image = SnapshotTestSupport.buildImage(host, dir);
    }

    @AfterEach
    void tearDown() {
        try {
            if (host != null) {
                host.close();
            }
        } finally {
            if (dir != null) {
                TestHost.lastResortCleanup(dir);
            }
        }
    }

    private Sandbox create() {
        return host.create(SandboxSpec.of(image).memory("256m").env("TRAJ", "1").workdir("/home").label("task", "t1"));
    }

    @Test
    void tortureTreeIsTheSameInEveryBranch() {
        try (Sandbox source = create()) {
            sh(source, "mkdir -p /w");
            SnapshotTestSupport.torture(source);
            String before = dump(source);
            Snapshot snap = source.snapshot(SnapshotMode.FILESYSTEM, Map.of("step", "1"));

            assertThat(snap.id()).matches("snap-[0-9a-f]+");
            assertThat(snap.parentId()).isEmpty();
            assertThat(snap.labels()).containsEntry("step", "1");
            assertThat(snap.spec().env()).containsEntry("TRAJ", "1");
            assertThat(snap.spec().workdir()).isEqualTo("/home");
            assertThat(snap.spec().labels()).containsEntry("task", "t1");
            assertThat(snap.image().diffs()).containsExactly(snap.diff());
            assertThat(snap.diff().kind()).isEqualTo(LayerKind.DIFF);
            // The 64 MiB sparse file's holes are not stored.
            assertThat(snap.diff().sizeBytes()).isLessThan(16L << 20);
            SnapshotTimings timings = snap.timings().orElseThrow();
            assertThat(timings.bytes()).isGreaterThanOrEqualTo(64L << 20);
            assertThat(timings.pause()).isPositive();
            assertThat(timings.total()).isGreaterThanOrEqualTo(timings.pause());

            // The source goes on running, unchanged by the snapshot.
            SnapshotTestSupport.assertSameTree(dump(source), before, "the source after its snapshot");
            sh(source, "echo after > /w/after-snapshot");

            List<Sandbox> branches = snap.branch(2);
            try {
                assertThat(branches).hasSize(2);
                for (Sandbox b : branches) {
                    assertThat(b.spec().env()).containsEntry("TRAJ", "1");
                    assertThat(b.spec().workdir()).isEqualTo("/home");
                    SnapshotTestSupport.assertSameTree(dump(b), before, "branch " + b.id());
                    // A branch runs its own processes and writes its own upper.
                    assertThat(sh(b, "cat /w/z/b/c /repo/new; pwd")).isEqualTo("deep\nfresh\n/home\n");
                }
            } finally {
                branches.forEach(Sandbox::close);
            }
        }
    }

    @Test
    void branchesShareLayerMountsAndKeepTheirWritesPrivate() throws Exception {
        try (Sandbox source = create()) {
            sh(source, "mkdir -p /w && echo shared > /w/state");
            Snapshot snap = source.snapshot();
            List<Sandbox> branches = host.branch(snap, 8);
            try {
                Path mounts = dir.resolve("state/mounts").toRealPath();
                List<String> layerMounts = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                    .map(l -> l.split(" ")[4]).filter(mp -> mp.startsWith(mounts + "/")).toList();
                // base, workspace, toolkit, diff: one mount each, whatever the number of sandboxes.
                assertThat(layerMounts).hasSize(4).doesNotHaveDuplicates();
                for (Sandbox b : branches) {
                    sh(b, "echo " + b.id() + " > /w/mine && echo changed >> /w/state");
                }
                for (Sandbox b : branches) {
                    assertThat(sh(b, "cat /w/mine")).isEqualTo(b.id() + "\n");
                    assertThat(sh(b, "cat /w/state")).isEqualTo("shared\nchanged\n");
                }
                assertThat(sh(source, "cat /w/state; ls /w")).isEqualTo("shared\nstate\n");
                Set<String> ids = new HashSet<>();
                branches.forEach(b -> ids.add(b.id()));
                assertThat(ids).hasSize(8);
            } finally {
                branches.forEach(Sandbox::close);
            }
        }
    }

    @Test
    void chainsOfSnapshotsAreSquashedBeyondTheConfiguredDepth() {
        try (Sandbox source = create()) {
            sh(source, "mkdir -p /w && echo 1 > /w/one && echo gone > /w/gone && mkdir -p /w/dir/sub && echo a > /w/dir/sub/a");
            Snapshot s1 = source.snapshot();
            Sandbox b1 = s1.branch(1).get(0);
            sh(b1, "echo 2 > /w/two && rm /w/gone && rm -rf /w/dir && mkdir /w/dir && echo b > /w/dir/b && rm /etc/group");
            Snapshot s2 = b1.snapshot();
            assertThat(s2.parentId()).contains(s1.id());
            assertThat(s2.image().diffs()).containsExactly(s1.diff(), s2.diff());
            assertThat(s2.timings().orElseThrow().squashed()).isFalse();
            Sandbox b2 = s2.branch(1).get(0);
            sh(b2, "echo 3 > /w/three && echo gone > /w/gone && rm /w/one && /opt/dsec/treetool setx /w/two user.x y && chmod 700 /w/dir");
            String expected = dump(b2);
            Snapshot s3 = b2.snapshot();
            // Depth 2: a chain of three diffs is squashed into one.
            assertThat(s3.parentId()).contains(s2.id());
            assertThat(s3.image().diffs()).containsExactly(s3.diff());
            assertThat(s3.timings().orElseThrow().squashed()).isTrue();
            List<Sandbox> b3 = s3.branch(1);
            try {
                SnapshotTestSupport.assertSameTree(dump(b3.get(0)), expected, "a branch of the squashed snapshot");
                assertThat(sh(b3.get(0), "ls /w; ls /w/dir; test -e /etc/group || echo no-group"))
                    .isEqualTo("dir\ngone\nthree\ntwo\nb\nno-group\n");
            } finally {
                b3.forEach(Sandbox::close);
                b1.close();
                b2.close();
            }
            // Every snapshot is in the store, with what a branch needs.
            assertThat(host.snapshots().list()).extracting(Snapshot::id).containsExactlyInAnyOrder(s1.id(), s2.id(), s3.id());
        }
    }

    @Test
    void deleteIsRefusedWhileBranchesOrChildSnapshotsDependOnItUnlessForced() {
        try (Sandbox source = create()) {
            sh(source, "mkdir -p /w && echo 1 > /w/one");
            Snapshot s1 = source.snapshot();
            Sandbox b = s1.branch(1).get(0);
            assertThatThrownBy(() -> host.snapshots().delete(s1.id()))
                .isInstanceOf(SnapshotException.class).hasMessageContaining(b.id()).hasMessageContaining("delete(id, true)");
            Snapshot s2 = b.snapshot();
            b.close();
            assertThatThrownBy(() -> host.snapshots().delete(s1.id()))
                .isInstanceOf(SnapshotException.class).hasMessageContaining(s2.id());
            host.snapshots().delete(s2.id());
            assertThat(host.snapshots().get(s2.id())).isEmpty();
            host.snapshots().delete(s1.id());
            assertThat(host.snapshots().get(s1.id())).isEmpty();
            assertThat(host.layers().list()).noneMatch(l -> l.kind() == LayerKind.DIFF);

            Snapshot s3 = source.snapshot();
            Sandbox still = s3.branch(1).get(0);
            try {
                host.snapshots().delete(s3.id(), true);
                assertThat(host.snapshots().get(s3.id())).isEmpty();
                assertThat(sh(still, "cat /w/one")).isEqualTo("1\n");
            } finally {
                still.close();
            }
            assertThatThrownBy(() -> host.snapshots().delete(s3.id())).isInstanceOf(SnapshotException.class).hasMessageContaining("no snapshot");
        }
    }

    @Test
    void clearErrors() {
        Sandbox closed = create();
        closed.close();
        assertThatThrownBy(closed::snapshot).isInstanceOf(SandboxClosedException.class).hasMessageContaining(closed.id());
        try (Sandbox source = create()) {
            assertThatThrownBy(() -> source.snapshot(SnapshotMode.MEMORY, Map.of()))
                .isInstanceOf(SnapshotException.class).hasMessageContaining("microVM");
            Snapshot snap = source.snapshot();
            assertThatThrownBy(() -> snap.branch(0)).isInstanceOf(InvalidSpecException.class).hasMessageContaining("n");
            assertThatThrownBy(() -> host.branch(snap, -1)).isInstanceOf(InvalidSpecException.class).hasMessageContaining("n");
            String unknown = "snap-00000000000000000000";
            assertThatThrownBy(() -> host.branch(unknown, 1)).isInstanceOf(SnapshotException.class).hasMessageContaining(unknown);
            assertThatThrownBy(() -> host.snapshots().delete(unknown)).isInstanceOf(SnapshotException.class).hasMessageContaining(unknown);
            assertThat(host.snapshots().get("not-an-id")).isEmpty();
            assertThat(host.sandboxes()).hasSize(1);
        }
    }

    @Test
    void theRecordNamesEveryLayerABranchNeeds() {
        try (Sandbox source = create()) {
            sh(source, "mkdir -p /w && echo 1 > /w/one");
            Snapshot snap = source.snapshot();
            Path record = dir.resolve("state/layers/snapshots/" + snap.id() + ".json");
            assertThat(record).exists();
            String json = new String(readAll(record), StandardCharsets.UTF_8);
            assertThat(json).contains("\"layers\"");
            for (var layer : snap.image().layers()) {
                assertThat(json).contains(layer.digest());
            }
            assertThat(host.snapshots().get(snap.id())).get().extracting(Snapshot::image).isEqualTo(snap.image());
        }
    }

    private static byte[] readAll(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
