package io.dsec.image.internal.ondemand;

import io.dsec.Image;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.image.BlobStores;
import io.dsec.image.OnDemandImages;
import java.nio.file.Path;

/**
 * Run in a child JVM by {@link OnDemandSandboxIT}: opens a host whose layers come on demand from the directory store
 * args[1], creates a sandbox of the base layer args[2] (a reference), prints {@code READY <id>} and waits to be killed.
 */
public final class HoldOnDemandSandboxMain {
    private HoldOnDemandSandboxMain() {
    }

    public static void main(String[] args) throws Exception {
        OnDemandImages images = OnDemandImages.from(BlobStores.directory(Path.of(args[1]))).recordWindow(java.time.Duration.ZERO).build();
        SandboxHost host = Sandboxes.builder().stateDir(Path.of(args[0])).layerStore(images).build();
        String[] ref = args[2].split(":");
        Sandbox sb = host.create(SandboxSpec.of(Image.of(host.layers().find(LayerKind.BASE, args[2]).orElseThrow())).memory("64m"));
        if (!sb.exec("true").ok()) {
            throw new IllegalStateException("the sandbox does not run " + ref[0]);
        }
        System.out.println("READY " + sb.id());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
