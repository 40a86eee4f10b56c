package io.dsec.internal.layer;

import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.testing.Capabilities;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Mounts built images and checks that owners, modes, symlinks and hardlinks came through. Needs root. */
class ErofsImageBuilderIT {
    @TempDir
    Path tmp;
    LayersImpl layers;
    LayerMounts mounts;

    @BeforeEach
    void setUp() {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        LocalLayerStore store = new LocalLayerStore(tmp.resolve("state"));
        layers = new LayersImpl(store, new ErofsImageBuilder());
        mounts = new LayerMounts(store, tmp.resolve("state"));
    }

    @AfterEach
    void cleanUp() {
        try {
            if (mounts != null) {
                mounts.close();
            }
        } finally {
            LayerFixtures.detachEverythingUnder(tmp);
        }
    }

    private static Path tree(Path dir) throws Exception {
        Files.createDirectories(dir.resolve("etc"));
        Files.createDirectories(dir.resolve("home/agent"));
        Files.createDirectories(dir.resolve("tmp"));
        Files.writeString(dir.resolve("etc/shadow"), "root:*:1::::::\n");
        Files.writeString(dir.resolve("home/agent/notes"), "mine\n");
        Files.writeString(dir.resolve("suid"), "#!/bin/sh\n");
        Files.write(dir.resolve("big"), new byte[3 << 20]);
        Files.writeString(dir.resolve("original"), "linked\n");
        Files.createLink(dir.resolve("hardlink"), dir.resolve("original"));
        Files.createSymbolicLink(dir.resolve("symlink"), Path.of("etc/shadow"));
        Files.createSymbolicLink(dir.resolve("dangling"), Path.of("/nowhere/at/all"));
        // Java opens a file to chmod it, which blocks on a FIFO: make it with its mode and owner by the tools.
        LayerFixtures.run("mkfifo", "-m", "620", dir.resolve("fifo").toString());
        LayerFixtures.run("chown", "-h", "5:7", dir.resolve("fifo").toString());
        set(dir, 0755, 0, 0);
        set(dir.resolve("etc"), 0755, 0, 0);
        set(dir.resolve("etc/shadow"), 0640, 0, 42);
        set(dir.resolve("home"), 0755, 0, 0);
        set(dir.resolve("home/agent"), 0700, 1000, 1000);
        set(dir.resolve("home/agent/notes"), 0600, 1000, 1000);
        set(dir.resolve("tmp"), 01777, 0, 0);
        set(dir.resolve("suid"), 04755, 0, 0);
        set(dir.resolve("big"), 0644, 65534, 65534);
        set(dir.resolve("original"), 0644, 0, 0);
        Files.setAttribute(dir.resolve("symlink"), "unix:uid", 1000, LinkOption.NOFOLLOW_LINKS);
        // Layers keep mtimes and a tar keeps whole seconds: whole-second mtimes make the two builds comparable.
        LayerFixtures.run("find", dir.toString(), "-exec", "touch", "-h", "-d", "@1700000000", "{}", "+");
        return dir;
    }

    private static void set(Path path, int mode, int uid, int gid) throws Exception {
        Files.setAttribute(path, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(path, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(path, "unix:mode", mode, LinkOption.NOFOLLOW_LINKS);
    }

    private static Object attr(Path path, String name) throws Exception {
        return Files.getAttribute(path, "unix:" + name, LinkOption.NOFOLLOW_LINKS);
    }

    private static void assertPreserved(Path root) throws Exception {
        assertThat(attr(root, "mode")).isEqualTo(040755);
        assertThat(attr(root.resolve("etc/shadow"), "mode")).isEqualTo(0100640);
        assertThat(attr(root.resolve("etc/shadow"), "gid")).isEqualTo(42);
        assertThat(attr(root.resolve("home/agent"), "mode")).isEqualTo(040700);
        assertThat(attr(root.resolve("home/agent"), "uid")).isEqualTo(1000);
        assertThat(attr(root.resolve("home/agent/notes"), "uid")).isEqualTo(1000);
        assertThat(attr(root.resolve("home/agent/notes"), "gid")).isEqualTo(1000);
        assertThat(Files.readString(root.resolve("home/agent/notes"))).isEqualTo("mine\n");
        assertThat(attr(root.resolve("tmp"), "mode")).isEqualTo(041777);
        assertThat(attr(root.resolve("suid"), "mode")).isEqualTo(0104755);
        assertThat(attr(root.resolve("big"), "uid")).isEqualTo(65534);
        assertThat(Files.size(root.resolve("big"))).isEqualTo(3 << 20);
        assertThat(attr(root.resolve("hardlink"), "ino")).isEqualTo(attr(root.resolve("original"), "ino"));
        assertThat(attr(root.resolve("original"), "nlink")).isEqualTo(2);
        assertThat(Files.readSymbolicLink(root.resolve("symlink"))).isEqualTo(Path.of("etc/shadow"));
        assertThat(attr(root.resolve("symlink"), "uid")).isEqualTo(1000);
        assertThat(Files.readSymbolicLink(root.resolve("dangling"))).isEqualTo(Path.of("/nowhere/at/all"));
        assertThat(Files.isRegularFile(root.resolve("fifo"), LinkOption.NOFOLLOW_LINKS)).isFalse();
        assertThat(attr(root.resolve("fifo"), "mode")).isEqualTo(010620);
        assertThat(attr(root.resolve("fifo"), "uid")).isEqualTo(5);
        assertThat(attr(root.resolve("fifo"), "gid")).isEqualTo(7);
    }

    @Test
    void ownersModesSymlinksAndHardlinksArePreserved() throws Exception {
        Layer layer = layers.fromDirectory(LayerKind.BASE, "attrs", tree(tmp.resolve("tree")));
        try (MountedLayer mounted = mounts.acquire(layer)) {
            assertPreserved(mounted.path());
            assertThat(new byte[3 << 20]).isEqualTo(Files.readAllBytes(mounted.path().resolve("big")));
        }
    }

    @Test
    void aTarKeepsTheSameOwnersAndDigest() throws Exception {
        Path tree = tree(tmp.resolve("tree"));
        Layer fromDir = layers.fromDirectory(LayerKind.BASE, "attrs:dir", tree);
        Layer fromTar = layers.fromTar(LayerKind.BASE, "attrs:tar", new ByteArrayInputStream(LayerFixtures.tarOf(tree)));

        assertThat(fromTar.digest()).isEqualTo(fromDir.digest());
        try (MountedLayer mounted = mounts.acquire(fromTar)) {
            assertPreserved(mounted.path());
        }
    }
}
