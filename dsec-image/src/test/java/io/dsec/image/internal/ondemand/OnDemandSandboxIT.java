package io.dsec.image.internal.ondemand;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxLaunchException;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.FetchStats;
import io.dsec.image.LayerManifest;
import io.dsec.image.LoadMode;
import io.dsec.image.OnDemandImages;
import io.dsec.image.SandboxFetchStats;
import io.dsec.image.internal.OnDemandLayerStore;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.agent.AgentIo;
import io.dsec.testing.Capabilities;
import io.dsec.testing.ChildJvm;
import io.dsec.testing.TestHost;
import io.dsec.testing.TestImages;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Sandboxes whose layers live in a shared directory store and are fetched through FUSE as they are read. */
class OnDemandSandboxIT {
    private Path dir;
    private Path storeDir;
    private Path baseTree;

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        Capabilities.require(Files.exists(Path.of("/dev/fuse")), "needs /dev/fuse: modprobe fuse");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        storeDir = Files.createDirectories(dir.resolve("store"));
        baseTree = TestImages.busyboxRootfs(dir.resolve("src/base"));
        // A large file of random bytes: a sandbox that never reads it never fetches it.
        byte[] big = new byte[24 << 20];
        new Random(7).nextBytes(big);
        Files.write(baseTree.resolve("big.bin"), big);
        Files.writeString(baseTree.resolve("small.txt"), "small and read\n");
    }

    @AfterEach
    void cleanUp() {
        if (dir != null) {
            TestHost.lastResortCleanup(dir);
        }
    }

    private OnDemandImages.Builder images() {
        return OnDemandImages.from(BlobStores.directory(storeDir)).recordWindow(Duration.ZERO);
    }

    private SandboxHost host(String name, OnDemandImages images) {
        return Sandboxes.builder().stateDir(dir.resolve(name)).layerStore(images).build();
    }

    @Test
    void sandboxesStartFromLazilyFetchedLayersAndReadOnlyWhatTheyTouch() throws Exception {
        OnDemandImages images = images().build();
        try (SandboxHost host = host("host-a", images)) {
            Layer base = host.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
            assertThat(storeDir.resolve(LayerManifest.manifestKey(base.digest()))).exists();
            try (Sandbox sb = host.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                assertThat(sb.exec("cat", "/small.txt").stdoutText()).isEqualTo("small and read\n");
                FetchStats stats = images.stats(base).orElseThrow();
                assertThat(stats.imageBytes()).isEqualTo(base.sizeBytes());
                assertThat(stats.bytesFetched()).isPositive();
                assertThat(stats.fetchedFraction()).as("the untouched 24 MiB file stays in the store").isLessThan(0.5);
                assertThat(stats.verificationFailures()).isZero();

                String sum = sb.exec("md5sum", "/big.bin").stdoutText().split(" ")[0];
                assertThat(sum).isEqualTo(md5(baseTree.resolve("big.bin")));
                assertThat(images.stats(base).orElseThrow().fetchedFraction()).isGreaterThan(0.5);
            }
        }
    }

    @Test
    void fetchesAreCountedForTheSandboxWhoseReadsNeededThem() throws Exception {
        OnDemandImages images = images().build();
        long bigBytes = Files.size(baseTree.resolve("big.bin"));
        try (SandboxHost host = host("host-a", images)) {
            Layer base = host.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
            // B alone reads first: what its cat needs (busybox, small.txt) is fetched on its behalf.
            try (Sandbox b = host.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                assertThat(b.exec("cat", "/small.txt").stdoutText()).isEqualTo("small and read\n");
                SandboxFetchStats before = images.stats(b).orElseThrow();
                assertThat(before.sandboxId()).isEqualTo(b.id());
                assertThat(before.reads()).isPositive();
                assertThat(before.bytesFetched()).isPositive();
                assertThat(before.chunkMisses()).isPositive();
                assertThat(before.layers()).isEqualTo(1);
                assertThat(before.imageBytes()).isEqualTo(base.sizeBytes());

                // Then A reads the 24 MiB nobody has read: fetched on A's behalf, none of it on B's.
                try (Sandbox a = host.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                    String sum = a.exec("md5sum", "/big.bin").stdoutText().split(" ")[0];
                    assertThat(sum).isEqualTo(md5(baseTree.resolve("big.bin")));
                    SandboxFetchStats sa = images.stats(a).orElseThrow();
                    SandboxFetchStats sb = images.stats(b).orElseThrow();
                    assertThat(sa.bytesRead()).as("%s", sa).isGreaterThanOrEqualTo(bigBytes);
                    assertThat(sa.bytesFetched()).as("%s", sa).isGreaterThanOrEqualTo(bigBytes * 2 / 3);
                    assertThat(sa.bytesFetched()).as("A %s, B %s", sa, sb).isGreaterThan(4 * sb.bytesFetched());
                    assertThat(sb.bytesFetched()).as("B read nothing meanwhile").isEqualTo(before.bytesFetched());
                    assertThat(sa.failedReads()).isZero();
                    FetchStats layer = images.stats(base).orElseThrow();
                    assertThat(layer.bytesFetched()).as("the layer counts every fetch")
                        .isGreaterThanOrEqualTo(sa.bytesFetched() + sb.bytesFetched());
                }
            }
        }
    }

    @Test
    void anotherHostBranchesOffTheSameStoreByReference() {
        try (SandboxHost a = host("host-a", images().build())) {
            a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        OnDemandImages images = images().build();
        try (SandboxHost b = host("host-b", images)) {
            Layer base = b.layers().find(LayerKind.BASE, "busybox-big:1").orElseThrow();
            assertThat(b.layers().list()).contains(base);
            try (Sandbox sb = b.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                assertThat(sb.exec("cat", "/small.txt").stdoutText()).isEqualTo("small and read\n");
            }
            assertThat(images.stats(base).orElseThrow().bytesFetched()).isPositive();
        }
    }

    @Test
    void fullPullFetchesEverythingBeforeTheMount() {
        try (SandboxHost a = host("host-a", images().build())) {
            a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        OnDemandImages images = images().mode(LoadMode.FULL_PULL).build();
        try (SandboxHost b = host("host-b", images)) {
            Layer base = b.layers().find(LayerKind.BASE, "busybox-big:1").orElseThrow();
            try (Sandbox sb = b.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                assertThat(images.stats(base).orElseThrow().bytesFetched()).isEqualTo(base.sizeBytes());
                assertThat(sb.exec("cat", "/small.txt").ok()).isTrue();
            }
        }
    }

    @Test
    void laterSandboxesPrefetchWhatTheFirstOnesRead() {
        Layer base;
        try (SandboxHost a = host("host-a", images().recordWindow(Duration.ofHours(1)).build())) {
            base = a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
            try (Sandbox sb = a.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
                assertThat(sb.exec("md5sum", "/big.bin").ok()).isTrue();
            }
        }
        assertThat(storeDir.resolve(LayerManifest.traceKey(base.digest()))).as("the trace is stored when the layer is released").exists();
        OnDemandImages images = images().build();
        try (SandboxHost b = host("host-b", images); Sandbox sb = b.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
            assertThat(sb.exec("md5sum", "/big.bin").ok()).isTrue();
            assertThat(images.stats(base).orElseThrow().prefetchedChunks()).isPositive();
        }
    }

    @Test
    void chunksTheStoreLacksFailTheCreateBeforeAnyMount() throws Exception {
        Layer base;
        try (SandboxHost a = host("host-a", images().build())) {
            base = a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        BlobStore store = BlobStores.directory(storeDir);
        LayerManifest manifest = LayerManifest.parse(store.get(LayerManifest.manifestKey(base.digest())), "test");
        store.delete(LayerManifest.chunkKey(manifest.chunks().get(manifest.chunkCount() - 1)));
        try (SandboxHost b = host("host-b", images().build())) {
            assertThatThrownBy(() -> b.create(SandboxSpec.of(Image.of(base)).memory("64m")))
                .isInstanceOf(SandboxLaunchException.class).hasMessageContaining("lacks").hasMessageContaining("push the layer again");
            assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain(dir.resolve("host-b/mounts").toString());
        }
    }

    @Test
    void aManifestThatDoesNotParseIsAClearError() throws Exception {
        Layer base;
        try (SandboxHost a = host("host-a", images().build())) {
            base = a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        Path manifest = storeDir.resolve(LayerManifest.manifestKey(base.digest()));
        manifest.toFile().setWritable(true);
        Files.writeString(manifest, "{not json");
        try (SandboxHost b = host("host-b", images().build())) {
            assertThatThrownBy(() -> b.create(SandboxSpec.of(Image.of(base)).memory("64m")))
                .isInstanceOf(DsecException.class).hasMessageContaining(LayerManifest.manifestKey(base.digest()));
        }
    }

    @Test
    void corruptChunksAreNeverServed() throws Exception {
        Layer base;
        try (SandboxHost a = host("host-a", images().build())) {
            base = a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        BlobStore store = BlobStores.directory(storeDir);
        LayerManifest manifest = LayerManifest.parse(store.get(LayerManifest.manifestKey(base.digest())), "test");
        // Corrupt only chunks that hold big.bin's bytes (random data: a chunk found inside the file is the file's), so
        // the metadata the runtime needs stays intact.
        byte[] big = Files.readAllBytes(baseTree.resolve("big.bin"));
        int corrupted = 0;
        for (String hex : manifest.chunks()) {
            Path chunk = storeDir.resolve(LayerManifest.chunkKey(hex));
            byte[] bytes = Files.readAllBytes(chunk);
            if (indexOf(big, bytes) >= 0) {
                chunk.toFile().setWritable(true);
                bytes[0] ^= 0x55;
                Files.write(chunk, bytes);
                corrupted++;
            }
        }
        assertThat(corrupted).isPositive();
        OnDemandImages images = images().build();
        try (SandboxHost b = host("host-b", images); Sandbox sb = b.create(SandboxSpec.of(Image.of(base)).memory("64m"))) {
            ExecResult r = sb.exec("md5sum", "/big.bin");
            assertThat(r.exitCode()).isNotZero();
            assertThat(r.stderrText()).contains("Input/output error");
            assertThat(images.stats(base).orElseThrow().verificationFailures()).isGreaterThanOrEqualTo(2);
            assertThat(sb.exec("cat", "/small.txt").ok()).as("the sandbox goes on working").isTrue();
        }
    }

    @Test
    void sandboxesKeepTheirLayersWhenTheJvmServingThemDies() throws Exception {
        try (SandboxHost a = host("host-a", images().build())) {
            a.layers().fromDirectory(LayerKind.BASE, "busybox-big:1", baseTree);
        }
        Path state = dir.resolve("host-child");
        try (ChildJvm child = ChildJvm.start(HoldOnDemandSandboxMain.class, dir.resolve("child.log"), state.toString(), storeDir.toString(),
            "busybox-big:1")) {
            String id = child.awaitReady();
            assertThat(id).as("child log %s", child.log()).isNotNull();
            child.kill();

            // A new JVM (this one) opens the store on the dead one's state directory and takes over serving.
            try (OnDemandLayerStore store = OnDemandLayerStore.open(state, images().build().settingsForTests());
                 AgentIo io = new AgentIo();
                 AgentConnection agent = AgentConnection.connect(io, state.resolve("sandboxes/" + id + "/agent.sock"), Duration.ofSeconds(10))) {
                ExecResult r = agent.exec(Exec.of("md5sum", "/big.bin"), Map.of(), "/").join();
                assertThat(r.stdoutText().split(" ")[0]).as(r.stderrText()).isEqualTo(md5(baseTree.resolve("big.bin")));
            }
        }
    }

    /** Where {@code part} starts in {@code whole}, or -1; compares the first 64 bytes, then all. */
    private static int indexOf(byte[] whole, byte[] part) {
        outer:
        for (int i = 0; i + part.length <= whole.length; i++) {
            for (int j = 0; j < Math.min(64, part.length); j++) {
                if (whole[i + j] != part[j]) {
                    continue outer;
                }
            }
            return java.util.Arrays.equals(whole, i, i + part.length, part, 0, part.length) ? i : -1;
        }
        return -1;
    }

    private static String md5(Path file) throws Exception {
        java.security.MessageDigest md = java.security.MessageDigest.getInstance("MD5");
        return java.util.HexFormat.of().formatHex(md.digest(Files.readAllBytes(file)));
    }

}
