package io.dsec.benchmarks;

import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.SandboxHost;
import io.dsec.Sandboxes;
import io.dsec.testing.TestHost;
import io.dsec.testing.TestImages;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A host on a fresh state directory with a busybox base and a small workspace, removed entirely on close. */
final class BenchHost implements AutoCloseable {
    final Path dir;
    final SandboxHost host;
    final Path baseRootfs;
    final Image image;

    BenchHost() throws IOException {
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-bench-");
        SandboxHost h = null;
        try {
            h = Sandboxes.builder().stateDir(dir.resolve("state")).build();
            baseRootfs = TestImages.busyboxRootfs(dir.resolve("src/base"));
            Layer base = h.layers().fromDirectory(LayerKind.BASE, "busybox:bench", baseRootfs);
            Layer workspace = h.layers().fromDirectory(LayerKind.WORKSPACE, "repo:bench", TestImages.workspaceTree(dir.resolve("src/ws")));
            image = Image.of(base, workspace);
            host = h;
        } catch (RuntimeException e) {
            if (h != null) {
                h.close();
            }
            TestHost.lastResortCleanup(dir);
            throw e;
        }
    }

    @Override
    public void close() {
        try {
            host.close();
        } finally {
            TestHost.lastResortCleanup(dir);
        }
    }
}
