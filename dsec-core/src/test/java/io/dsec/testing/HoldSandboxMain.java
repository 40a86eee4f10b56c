package io.dsec.testing;

import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import java.nio.file.Path;

/**
 * Run in a child JVM by tests: opens a host on args[0], creates a sandbox that writes a marker, prints
 * {@code READY <id>} and then waits to be killed, so the test can check the sandbox outlives its JVM.
 */
public final class HoldSandboxMain {
    private HoldSandboxMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        SandboxHost host = Sandboxes.builder().stateDir(dir.resolve("state")).build();
        Layer base = host.layers().fromDirectory(LayerKind.BASE, "busybox:1", TestImages.busyboxRootfs(dir.resolve("src/base")));
        Sandbox sb = host.create(SandboxSpec.of(Image.of(base)).memory("64m"));
        if (!sb.exec("sh", "-c", "echo alive > /tmp/marker").ok()) {
            throw new IllegalStateException("could not write the marker");
        }
        System.out.println("READY " + sb.id());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
