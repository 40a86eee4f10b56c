package io.dsec.snapshot;

import static io.dsec.snapshot.SnapshotTestSupport.dump;
import static io.dsec.snapshot.SnapshotTestSupport.sh;
import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.Image;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.Snapshot;
import io.dsec.image.BlobStores;
import io.dsec.image.OnDemandImages;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A snapshot id is all another host on the same store needs to branch it; its diff is fetched on demand there. */
class CrossHostSnapshotIT {
    private Path dir;

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        Capabilities.require(Files.exists(Path.of("/dev/fuse")), "needs /dev/fuse: modprobe fuse");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
    }

    @AfterEach
    void cleanUp() {
        if (dir != null) {
            TestHost.lastResortCleanup(dir);
        }
    }

    private SandboxHost host(String name) {
        OnDemandImages images = OnDemandImages.from(BlobStores.directory(dir.resolve("store"))).recordWindow(Duration.ZERO).build();
        return Sandboxes.builder().stateDir(dir.resolve(name)).layerStore(images).build();
    }

    @Test
    void anotherHostBranchesASnapshotById() throws Exception {
        Files.createDirectories(dir.resolve("store"));
        try (SandboxHost a = host("host-a"); SandboxHost b = host("host-b")) {
            Image image = SnapshotTestSupport.buildImage(a, dir);
            String id;
            String expected;
            try (Sandbox source = a.create(SandboxSpec.of(image).memory("256m").env("STEP", "7"))) {
                sh(source, "mkdir -p /w");
                SnapshotTestSupport.torture(source);
                expected = dump(source);
                Snapshot snap = source.snapshot();
                id = snap.id();
            }
            // Host b has never seen the snapshot, its diff or its layers: it finds all of them by the id.
            assertThat(b.snapshots().list()).extracting(Snapshot::id).containsExactly(id);
            Snapshot found = b.snapshots().get(id).orElseThrow();
            assertThat(found.spec().env()).containsEntry("STEP", "7");
            List<Sandbox> branches = b.branch(id, 2);
            try {
                for (Sandbox branch : branches) {
                    SnapshotTestSupport.assertSameTree(dump(branch), expected, "branch " + branch.id() + " on the other host");
                }
                // A snapshot of a branch on host b is seen by host a, with its parent.
                Snapshot child = branches.get(0).snapshot();
                assertThat(child.parentId()).contains(id);
                assertThat(a.snapshots().get(child.id())).get().extracting(s -> s.image().diffs().size()).isEqualTo(2);
            } finally {
                branches.forEach(Sandbox::close);
            }
        }
    }
}
