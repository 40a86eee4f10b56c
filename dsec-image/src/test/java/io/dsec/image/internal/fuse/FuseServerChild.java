package io.dsec.image.internal.fuse;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * A JVM that serves one pattern file and then waits to be killed: {@code <mountpoint> <stateDir> <size> <slowOffset>
 * <slowLength>}. Reads that touch the slow range never complete: the child prints {@code BLOCKED} first. Prints
 * {@code READY} once mounted; exits (closing the server) when its stdin ends.
 */
public final class FuseServerChild {
    private FuseServerChild() {
    }

    public static void main(String[] args) throws Exception {
        Path mountpoint = Path.of(args[0]);
        Path stateDir = Path.of(args[1]);
        long size = Long.parseLong(args[2]);
        long slowOffset = Long.parseLong(args[3]);
        long slowLength = Long.parseLong(args[4]);
        FuseServer server = FuseServer.mount(mountpoint, stateDir, 2);
        server.add("layer.img", TestFuseFiles.gated(size, slowOffset, slowOffset + slowLength, new CountDownLatch(1), () -> {
                System.out.println("BLOCKED");
                System.out.flush();
            }));
        System.out.println("READY");
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the parent to close stdin (or kill this JVM)
        }
        server.close();
    }
}
