package io.dsec.internal.layer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.internal.nativeio.Posix;
import io.dsec.spi.LayerStore.BuiltImage;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LayerMountsIT {
    @TempDir
    Path tmp;
    LocalLayerStore store;
    LayersImpl layers;
    LayerMounts mounts;

    @BeforeEach
    void setUp() {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        store = new LocalLayerStore(tmp.resolve("state"));
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

    private Layer workspace() {
        return layers.fromDirectory(LayerKind.WORKSPACE, "ws", TestImages.workspaceTree(tmp.resolve("ws")));
    }

    private static int mountCount(Path path) {
        return MountTable.mountCount(path);
    }

    @Test
    void twoAcquiresShareOneMountAndTheLastReleaseUnmounts() throws Exception {
        Layer layer = workspace();

        MountedLayer first = mounts.acquire(layer);
        MountedLayer second = mounts.acquire(layer);

        assertThat(second.path()).isEqualTo(first.path());
        assertThat(first.path()).isEqualTo(tmp.resolve("state/mounts").toRealPath().resolve(layer.hex()));
        assertThat(mountCount(first.path())).isEqualTo(1);
        assertThat(mounts.mountedCount()).isEqualTo(1);
        // file-backed: the source is the blob itself, not a loop device
        assertThat(MountTable.read()).filteredOn(e -> e.mountPoint().equals(first.path()))
            .singleElement()
            .satisfies(e -> {
                assertThat(e.fsType()).isEqualTo("erofs");
                assertThat(e.source()).doesNotContain("/dev/loop");
            });

        first.close();
        first.close(); // idempotent: does not release the second use
        assertThat(mountCount(second.path())).isEqualTo(1);
        assertThat(Files.readString(second.path().resolve("repo/README"))).isEqualTo("A test workspace for dsec.\n");

        second.close();
        assertThat(mountCount(second.path())).isZero();
        assertThat(second.path()).doesNotExist();
        assertThat(mounts.mountedCount()).isZero();

        // and it mounts again afterwards
        try (MountedLayer again = mounts.acquire(layer)) {
            assertThat(mountCount(again.path())).isEqualTo(1);
        }
    }

    @Test
    void readsFilesThroughTheMountReadOnly() throws Exception {
        Layer layer = workspace();
        try (MountedLayer mounted = mounts.acquire(layer)) {
            Path app = mounted.path().resolve("repo/app.sh");
            assertThat(Files.readString(app)).startsWith("#!/bin/sh\n");
            assertThat(Files.isExecutable(app)).isTrue();
            assertThat(Files.getAttribute(mounted.path().resolve("repo"), "unix:uid")).isEqualTo(1000);
            assertThatThrownBy(() -> Files.writeString(mounted.path().resolve("repo/new"), "x"))
                .isInstanceOf(java.nio.file.FileSystemException.class)
                .hasMessageContaining("Read-only");
        }
    }

    @Test
    void eightThreadsAcquiringOneLayerMountItOnce() throws Exception {
        Layer layer = workspace();
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<MountedLayer> acquired = new ArrayList<>();
        try {
            List<Future<MountedLayer>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return mounts.acquire(layer);
                }));
            }
            start.countDown();
            for (Future<MountedLayer> future : futures) {
                acquired.add(future.get(60, TimeUnit.SECONDS));
            }
            Path path = acquired.get(0).path();
            assertThat(acquired).extracting(MountedLayer::path).containsOnly(path);
            assertThat(mountCount(path)).isEqualTo(1);

            List<Future<?>> releases = new ArrayList<>();
            CountDownLatch release = new CountDownLatch(1);
            for (MountedLayer m : acquired) {
                releases.add(pool.submit(() -> {
                    release.await();
                    m.close();
                    return null;
                }));
            }
            release.countDown();
            for (Future<?> f : releases) {
                f.get(60, TimeUnit.SECONDS);
            }
            assertThat(mountCount(path)).isZero();
            assertThat(path).doesNotExist();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void differentLayersGetTheirOwnMounts() throws Exception {
        Layer ws = workspace();
        Layer base = layers.fromDirectory(LayerKind.BASE, "busybox", TestImages.busyboxRootfs(tmp.resolve("rootfs")));

        try (MountedLayer a = mounts.acquire(ws); MountedLayer b = mounts.acquire(base)) {
            assertThat(a.path()).isNotEqualTo(b.path());
            assertThat(mountCount(a.path())).isEqualTo(1);
            assertThat(mountCount(b.path())).isEqualTo(1);
            assertThat(Files.isSymbolicLink(b.path().resolve("bin/sh"))).isTrue();
            assertThat(Files.readString(b.path().resolve("etc/passwd"))).contains("agent:x:1000:1000");
            assertThat(Files.getAttribute(b.path().resolve("tmp"), "unix:mode")).isEqualTo(041777);
        }
    }

    @Test
    void aCorruptImageFailsClearlyAndLeavesNothingMounted() throws Exception {
        byte[] garbage = new byte[2 << 20];
        new Random(7).nextBytes(garbage);
        Path file = Files.createTempFile(store.stagingDirectory(), "corrupt-", ".tmp");
        Files.write(file, garbage);
        String digest = "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(garbage));
        Layer corrupt = store.put(LayerKind.BASE, "corrupt", "1", new BuiltImage(file, digest, garbage.length));

        assertThatThrownBy(() -> mounts.acquire(corrupt))
            .isInstanceOf(LayerMountException.class)
            .hasMessageContaining("not a valid EROFS image")
            .hasMessageContaining(corrupt.hex());
        Path mountPoint = mounts.mountsDirectory().resolve(corrupt.hex());
        assertThat(mountCount(mountPoint)).isZero();
        assertThat(mountPoint).doesNotExist();
        assertThat(MountTable.mountPointsUnder(tmp.toRealPath())).isEmpty();
        assertThat(mounts.mountedCount()).isZero();
    }

    @Test
    void closeUnmountsEverythingAndLaterReleasesDoNothing() throws Exception {
        Layer ws = workspace();
        Layer other = layers.fromDirectory(LayerKind.TOOLKIT, "tools",
            LayerFixtures.tree(tmp.resolve("tools"), false, java.time.Instant.EPOCH));
        MountedLayer a = mounts.acquire(ws);
        MountedLayer b = mounts.acquire(other);
        mounts.acquire(other);

        mounts.close();

        assertThat(mountCount(a.path())).isZero();
        assertThat(mountCount(b.path())).isZero();
        assertThat(a.path()).doesNotExist();
        assertThat(MountTable.mountPointsUnder(tmp.toRealPath())).isEmpty();
        a.close();
        b.close();
        mounts.close();
        assertThatThrownBy(() -> mounts.acquire(ws)).isInstanceOf(DsecException.class).hasMessageContaining("closed");
    }

    @Test
    void aStaleMountLeftByACrashedProcessIsReplaced() throws Exception {
        Layer layer = workspace();
        Path mountPoint = mounts.mountsDirectory().resolve(layer.hex());
        Files.createDirectories(mountPoint);
        Posix.mount(store.mountSource(layer).toString(), mountPoint, "erofs", Posix.MS_RDONLY | Posix.MS_NODEV, null);
        assertThat(mountCount(mountPoint)).isEqualTo(1);

        try (MountedLayer mounted = mounts.acquire(layer)) {
            assertThat(mountCount(mounted.path())).isEqualTo(1);
            assertThat(mounted.path().resolve("repo/README")).isRegularFile();
        }
        assertThat(mountCount(mountPoint)).isZero();
    }
}
