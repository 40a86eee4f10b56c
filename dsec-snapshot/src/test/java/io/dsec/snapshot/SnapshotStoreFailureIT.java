package io.dsec.snapshot;

import static io.dsec.snapshot.SnapshotTestSupport.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.SandboxState;
import io.dsec.Sandboxes;
import io.dsec.SnapshotException;
import io.dsec.internal.layer.LocalLayerStore;
import io.dsec.internal.oci.CgroupLayout;
import io.dsec.spi.LayerStore;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A store that fails half-way through a snapshot: a clear error, no record, the source sandbox running and thawed. */
class SnapshotStoreFailureIT {
    enum Fail { NONE, DIFF, RECORD }

    /** The local store, failing the put of a diff layer or of a document when told to. */
    static final class FailingStore implements LayerStore {
        final LayerStore delegate;
        volatile Fail fail = Fail.NONE;

        FailingStore(LayerStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public Path stagingDirectory() {
            return delegate.stagingDirectory();
        }

        @Override
        public Layer put(LayerKind kind, String name, String version, BuiltImage image) {
            if (kind == LayerKind.DIFF && fail == Fail.DIFF) {
                throw new DsecException("injected: the store is unreachable");
            }
            return delegate.put(kind, name, version, image);
        }

        @Override
        public boolean contains(String digest) {
            return delegate.contains(digest);
        }

        @Override
        public Optional<Layer> get(String digest) {
            return delegate.get(digest);
        }

        @Override
        public Optional<Layer> find(LayerKind kind, String name, String version) {
            return delegate.find(kind, name, version);
        }

        @Override
        public List<Layer> list() {
            return delegate.list();
        }

        @Override
        public Path mountSource(Layer layer) {
            return delegate.mountSource(layer);
        }

        @Override
        public void putDocument(String key, byte[] content) {
            if (fail == Fail.RECORD) {
                throw new DsecException("injected: the store is full");
            }
            delegate.putDocument(key, content);
        }

        @Override
        public Optional<byte[]> getDocument(String key) {
            return delegate.getDocument(key);
        }

        @Override
        public List<String> listDocuments(String prefix) {
            return delegate.listDocuments(prefix);
        }

        @Override
        public void deleteDocument(String key) {
            delegate.deleteDocument(key);
        }

        @Override
        public void deleteReference(LayerKind kind, String name, String version) {
            delegate.deleteReference(kind, name, version);
        }
    }

    private Path dir;
    private SandboxHost host;
    private FailingStore store;
    private Image image;

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        host = Sandboxes.builder().stateDir(dir.resolve("state")).layerStore(stateDir -> {
            store = new FailingStore(new LocalLayerStore(stateDir));
            return store;
        }).build();
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

    @Test
    void aStoreFailureLeavesNoSnapshotAndTheSourceRunning() throws Exception {
        try (Sandbox source = host.create(SandboxSpec.of(image).memory("128m"))) {
            sh(source, "echo work > /tmp/work");
            for (Fail fail : List.of(Fail.DIFF, Fail.RECORD)) {
                store.fail = fail;
                assertThatThrownBy(source::snapshot).isInstanceOf(SnapshotException.class)
                    .hasMessageContaining("injected").hasMessageContaining("no snapshot was recorded");
                assertThat(host.snapshots().list()).isEmpty();
                assertThat(host.layers().list()).noneMatch(l -> l.kind() == LayerKind.DIFF);
                assertThawed(source);
                assertThat(source.state()).isEqualTo(SandboxState.RUNNING);
                assertThat(sh(source, "echo " + fail + " >> /tmp/work && tail -n 1 /tmp/work")).isEqualTo(fail + "\n");
            }
            assertThat(Files.list(dir.resolve("state/snapshots/tmp")).toList()).isEmpty();
            store.fail = Fail.NONE;
            var snap = source.snapshot();
            assertThat(host.snapshots().list()).containsExactly(snap);
            try (Sandbox branch = snap.branch(1).get(0)) {
                assertThat(sh(branch, "cat /tmp/work")).isEqualTo("work\nDIFF\nRECORD\n");
            }
        }
    }

    private static void assertThawed(Sandbox sandbox) throws Exception {
        int checked = 0;
        for (Path d : CgroupLayout.ofHost().cgroupDirs("/dsec/" + sandbox.id())) {
            Path v1 = d.resolve("freezer.state");
            if (Files.exists(v1)) {
                assertThat(Files.readString(v1).strip()).isEqualTo("THAWED");
                checked++;
            }
            Path v2 = d.resolve("cgroup.freeze");
            if (Files.exists(v2)) {
                assertThat(Files.readString(v2).strip()).isEqualTo("0");
                checked++;
            }
        }
        assertThat(checked).as("a freezer file of " + sandbox.id()).isPositive();
    }
}
