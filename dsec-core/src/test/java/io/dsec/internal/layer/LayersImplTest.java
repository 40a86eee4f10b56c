package io.dsec.internal.layer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.InvalidSpecException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestImages;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LayersImplTest {
    @TempDir
    Path tmp;
    LayersImpl layers;

    @BeforeEach
    void setUp() {
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        layers = LayersImpl.local(tmp.resolve("state"));
    }

    private long blobCount() throws Exception {
        try (var files = Files.list(tmp.resolve("state/layers/blobs/sha256"))) {
            return files.filter(p -> p.toString().endsWith(".erofs")).count();
        }
    }

    @Test
    void buildsFromADirectoryAndFindsItByReference() throws Exception {
        Path tree = LayerFixtures.tree(tmp.resolve("tree"), false, Instant.EPOCH);

        Layer layer = layers.fromDirectory(LayerKind.BASE, "mini", tree);

        assertThat(layer.kind()).isEqualTo(LayerKind.BASE);
        assertThat(layer.reference()).isEqualTo("mini:latest");
        assertThat(layer.sizeBytes() % ErofsImageBuilder.ALIGNMENT).isZero();
        assertThat(layers.find(LayerKind.BASE, "mini")).contains(layer);
        assertThat(layers.find(LayerKind.BASE, "mini:latest")).contains(layer);
        assertThat(layers.get(layer.digest())).contains(layer);
        assertThat(layers.list()).containsExactly(layer);
    }

    @Test
    void rebuildingTheSameTreeStoresItOnceAndTarMatches() throws Exception {
        Path tree = LayerFixtures.tree(tmp.resolve("tree"), false, Instant.EPOCH);
        Path copy = LayerFixtures.tree(tmp.resolve("copy"), true, Instant.EPOCH);

        Layer first = layers.fromDirectory(LayerKind.WORKSPACE, "task:1", tree);
        Layer second = layers.fromDirectory(LayerKind.WORKSPACE, "task:2", copy);
        Layer third = layers.fromTar(LayerKind.WORKSPACE, "task:3", new ByteArrayInputStream(LayerFixtures.tarOf(tree)));

        assertThat(second.digest()).isEqualTo(first.digest());
        assertThat(third.digest()).isEqualTo(first.digest());
        assertThat(blobCount()).isEqualTo(1);
        assertThat(layers.list()).extracting(Layer::version).containsExactly("1", "2", "3");
        try (var staging = Files.list(layers.store().stagingDirectory())) {
            assertThat(staging).isEmpty();
        }
    }

    @Test
    void testImagesAreDeterministic() throws Exception {
        Layer first = layers.fromDirectory(LayerKind.BASE, "busybox:1", TestImages.busyboxRootfs(tmp.resolve("r1")));
        Layer second = layers.fromDirectory(LayerKind.BASE, "busybox:2", TestImages.busyboxRootfs(tmp.resolve("r2")));
        Layer ws1 = layers.fromDirectory(LayerKind.WORKSPACE, "ws:1", TestImages.workspaceTree(tmp.resolve("w1")));
        Layer ws2 = layers.fromDirectory(LayerKind.WORKSPACE, "ws:2", TestImages.workspaceTree(tmp.resolve("w2")));

        assertThat(second.digest()).isEqualTo(first.digest());
        assertThat(ws2.digest()).isEqualTo(ws1.digest());
        assertThat(tmp.resolve("r1/bin/sh")).isSymbolicLink();
        assertThat(Files.readSymbolicLink(tmp.resolve("r1/bin/sh"))).isEqualTo(Path.of("busybox"));
        for (String applet : TestImages.COMMON_APPLETS) {
            assertThat(tmp.resolve("r1/bin/" + applet)).isSymbolicLink();
        }
        assertThat(Files.getAttribute(tmp.resolve("r1/tmp"), "unix:mode")).isEqualTo(041777);
        assertThat(tmp.resolve("w1/repo/app.sh")).isExecutable();
    }

    @Test
    void aSymlinkToATreeBuildsTheTree() throws Exception {
        Path tree = LayerFixtures.tree(tmp.resolve("tree"), false, Instant.EPOCH);
        Path link = Files.createSymbolicLink(tmp.resolve("link"), tree);

        assertThat(layers.fromDirectory(LayerKind.BASE, "viaLink".toLowerCase(), link).digest())
            .isEqualTo(layers.fromDirectory(LayerKind.BASE, "direct", tree).digest());
    }

    @Test
    void badReferencesAndKindsAreRejectedBeforeBuilding() throws Exception {
        Path tree = LayerFixtures.tree(tmp.resolve("tree"), false, Instant.EPOCH);

        assertThatThrownBy(() -> layers.fromDirectory(LayerKind.BASE, "Bad Name", tree))
            .isInstanceOf(InvalidSpecException.class).hasMessageContaining("layer.name");
        assertThatThrownBy(() -> layers.fromDirectory(LayerKind.BASE, "ok:", tree))
            .isInstanceOf(InvalidSpecException.class).hasMessageContaining("layer.version");
        assertThatThrownBy(() -> layers.fromDirectory(null, "ok", tree))
            .isInstanceOf(InvalidSpecException.class).hasMessageContaining("layer.kind");
        assertThat(blobCount()).isZero();
    }
}
