package io.dsec.image.internal.ondemand;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
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
import io.dsec.image.OnDemandImages;
import io.dsec.image.SandboxFetchStats;
import io.dsec.image.testing.NginxServer;
import io.dsec.image.testing.S3TestServer;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestHost;
import io.dsec.testing.TestImages;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sandboxes over on-demand layers in each kind of store (S3, HTTP), and what a host does when its store is unreachable
 * or stops answering.
 */
class OnDemandStoresIT {
    private static final String LAYER = "busybox-big:1";
    private static final String SMALL = "small and read\n";

    private Path dir;
    private Path storeDir;
    private Path baseTree;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        Capabilities.require(Files.exists(Path.of("/dev/fuse")), "needs /dev/fuse: modprobe fuse");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        storeDir = Files.createDirectories(dir.resolve("store"));
        baseTree = TestImages.busyboxRootfs(dir.resolve("src/base"));
        byte[] big = new byte[8 << 20];
        new Random(11).nextBytes(big);
        Files.write(baseTree.resolve("big.bin"), big);
        Files.writeString(baseTree.resolve("small.txt"), SMALL);
    }

    @AfterEach
    void cleanUp() throws Exception {
        Exception failure = null;
        for (int i = closeables.size() - 1; i >= 0; i--) {
            try {
                closeables.get(i).close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (dir != null) {
            TestHost.lastResortCleanup(dir);
        }
        if (failure != null) {
            throw failure;
        }
    }

    private <T extends AutoCloseable> T closing(T t) {
        closeables.add(t);
        return t;
    }

    private SandboxHost host(String name, OnDemandImages images) {
        return Sandboxes.builder().stateDir(dir.resolve(name)).layerStore(images).build();
    }

    private static SandboxSpec spec(Layer base) {
        return SandboxSpec.of(Image.of(base)).memory("64m");
    }

    /** Pushes the test layer through a directory store over {@link #storeDir} from a host of its own. */
    private Layer pushToDirectory() {
        try (SandboxHost a = host("host-push", OnDemandImages.from(BlobStores.directory(storeDir)).recordWindow(Duration.ZERO).build())) {
            return a.layers().fromDirectory(LayerKind.BASE, LAYER, baseTree);
        }
    }

    @Test
    void sandboxesRunFromLayersPushedToAndFetchedFromS3() throws Exception {
        S3TestServer s3 = closing(S3TestServer.start());
        String bucket = s3.newBucket();
        BlobStore pushStore = closing(BlobStores.s3(s3.settings(bucket)));
        Layer base;
        try (SandboxHost a = host("host-a", OnDemandImages.from(pushStore).recordWindow(Duration.ZERO).build())) {
            base = a.layers().fromDirectory(LayerKind.BASE, LAYER, baseTree);
            assertThat(a.layers().list()).contains(base);
        }
        // Another host with its own (empty) chunk cache: everything it reads comes from the bucket.
        BlobStore readStore = closing(BlobStores.s3(s3.settings(bucket)));
        OnDemandImages images = OnDemandImages.from(readStore).recordWindow(Duration.ZERO).build();
        try (SandboxHost b = host("host-b", images)) {
            assertThat(b.layers().find(LayerKind.BASE, LAYER)).contains(base);
            try (Sandbox sb = b.create(spec(base))) {
                assertThat(sb.exec("cat", "/small.txt").stdoutText()).isEqualTo(SMALL);
                assertThat(sb.exec("md5sum", "/big.bin").stdoutText().split(" ")[0]).isEqualTo(md5(baseTree.resolve("big.bin")));
                FetchStats stats = images.stats(base).orElseThrow();
                assertThat(stats.bytesFetched()).isGreaterThanOrEqualTo(Files.size(baseTree.resolve("big.bin")));
                assertThat(stats.verificationFailures()).isZero();
                assertThat(stats.failedReads()).isZero();
                assertThat(images.stats(sb).orElseThrow().bytesFetched()).isPositive();
            }
        }
    }

    @Test
    void aSecondHostReadsLayersThroughNginxOverTheDirectoryTheyWerePushedTo() throws Exception {
        NginxServer.requireNginx();
        Layer pushed = pushToDirectory();
        NginxServer nginx = closing(NginxServer.start(storeDir));
        BlobStore http = closing(BlobStores.http(nginx.base(), Duration.ofSeconds(5), Duration.ofSeconds(20)));
        OnDemandImages images = OnDemandImages.from(http).recordWindow(Duration.ZERO).build();
        try (SandboxHost b = host("host-b", images)) {
            Layer base = b.layers().find(LayerKind.BASE, LAYER).orElseThrow();
            assertThat(base).isEqualTo(pushed);
            assertThatThrownBy(() -> b.layers().list()).isInstanceOf(DsecException.class).hasMessageContaining("cannot list");
            try (Sandbox sb = b.create(spec(base))) {
                assertThat(sb.exec("cat", "/small.txt").stdoutText()).isEqualTo(SMALL);
                assertThat(sb.exec("md5sum", "/big.bin").stdoutText().split(" ")[0])
                    .as("nginx log: %s", nginx.errorLog()).isEqualTo(md5(baseTree.resolve("big.bin")));
            }
            FetchStats stats = images.stats(base).orElseThrow();
            assertThat(stats.bytesFetched()).isPositive();
            assertThat(stats.failedReads()).isZero();
        }
    }

    @Test
    void anUnreachableStoreFailsTheCreateClearlyAndLeavesNothingBehind() throws Exception {
        Layer base = pushToDirectory();
        int port = closedPort();
        URI unreachable = URI.create("http://127.0.0.1:" + port + "/dsec/");
        BlobStore http = closing(BlobStores.http(unreachable, Duration.ofSeconds(2), Duration.ofSeconds(2)));
        Path state = dir.resolve("host-c");
        try (SandboxHost c = host("host-c", OnDemandImages.from(http).recordWindow(Duration.ZERO).build())) {
            assertThatThrownBy(() -> c.create(spec(base)))
                .isInstanceOf(SandboxLaunchException.class)
                .hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("check that the server is up");
            assertNothingLeftBehind(state);
            // The host stays usable: a second attempt fails the same way.
            assertThatThrownBy(() -> c.create(spec(base))).isInstanceOf(SandboxLaunchException.class);
            assertNothingLeftBehind(state);
        }
        assertNothingLeftBehind(state);
    }

    @Test
    void aStoreThatStopsAnsweringFailsReadsAfterTheFetchTimeoutAndTheSandboxGoesOn() throws Exception {
        Layer base = pushToDirectory();
        StallingServer server = closing(StallingServer.start(storeDir));
        BlobStore http = closing(BlobStores.http(server.base(), Duration.ofSeconds(2), Duration.ofSeconds(5)));
        OnDemandImages images = OnDemandImages.from(http).recordWindow(Duration.ZERO).fetchTimeout(Duration.ofSeconds(2)).build();
        try (SandboxHost s = host("host-s", images); Sandbox sb = s.create(spec(base))) {
            assertThat(sb.exec("cat", "/small.txt").stdoutText()).isEqualTo(SMALL);

            server.stallChunks();
            ExecResult r = sb.execAsync(Exec.of("cat", "/big.bin").maxOutputBytes(64 << 20).timeout(Duration.ofMinutes(2)))
                .get(3, TimeUnit.MINUTES);
            assertThat(r.timedOut()).as("the read fails instead of hanging: %s", r).isFalse();
            assertThat(r.exitCode()).as("%s", r).isNotZero();
            assertThat(r.stderrText()).as("%s", r).containsAnyOf("Input/output error", "timed out");
            assertThat(server.stalled()).as("chunk requests reached the stalled server").isPositive();

            assertThat(sb.exec("cat", "/small.txt").stdoutText()).as("cached files still read").isEqualTo(SMALL);
            assertThat(images.stats(base).orElseThrow().failedReads()).isPositive();
            SandboxFetchStats mine = images.stats(sb).orElseThrow();
            assertThat(mine.failedReads()).as("%s", mine).isPositive();
        }
    }

    private void assertNothingLeftBehind(Path state) throws IOException {
        String mountinfo = Files.readString(Path.of("/proc/self/mountinfo"));
        assertThat(mountinfo).as("mounts under %s", state).doesNotContain(state.toString() + "/");
        for (String runtime : List.of("crun", "runc")) {
            Path root = state.resolve("runtime").resolve(runtime);
            if (Files.isDirectory(root) && Capabilities.onPath(runtime)) {
                assertThat(run(runtime, "--root", root.toString(), "list", "-q").trim()).as("%s containers", runtime).isEmpty();
            }
        }
        Path sandboxes = state.resolve("sandboxes");
        if (Files.isDirectory(sandboxes)) {
            try (Stream<Path> s = Files.list(sandboxes)) {
                assertThat(s.toList()).as("sandbox directories").isEmpty();
            }
        }
    }

    private static String run(String... argv) throws IOException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        } finally {
            p.destroyForcibly();
        }
    }

    /** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    private static String md5(Path file) throws Exception {
        java.security.MessageDigest md = java.security.MessageDigest.getInstance("MD5");
        return java.util.HexFormat.of().formatHex(md.digest(Files.readAllBytes(file)));
    }

    /**
     * A blob directory over HTTP on 127.0.0.1 (JDK server) that, once told to, accepts GETs of chunks and never answers
     * them (until closed); manifests, references and HEADs are always answered.
     */
    static final class StallingServer implements AutoCloseable {
        private final HttpServer server;
        private final ExecutorService executor;
        private final Path root;
        private final CountDownLatch released = new CountDownLatch(1);
        private final AtomicInteger stalled = new AtomicInteger();
        private volatile boolean stall;

        private StallingServer(HttpServer server, ExecutorService executor, Path root) {
            this.server = server;
            this.executor = executor;
            this.root = root;
        }

        static StallingServer start(Path root) throws IOException {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 64);
            ExecutorService executor = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "stalling-http");
                t.setDaemon(true);
                return t;
            });
            StallingServer s = new StallingServer(server, executor, root.toAbsolutePath().normalize());
            server.setExecutor(executor); // a stalled exchange holds only its own thread
            server.createContext("/", s::handle);
            server.start();
            return s;
        }

        URI base() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
        }

        void stallChunks() {
            stall = true;
        }

        int stalled() {
            return stalled.get();
        }

        private void handle(HttpExchange ex) throws IOException {
            try (ex) {
                String path = ex.getRequestURI().getPath();
                Path file = root.resolve(path.substring(1)).normalize();
                if (!file.startsWith(root) || !Files.isRegularFile(file)) {
                    ex.sendResponseHeaders(404, -1);
                    return;
                }
                if (ex.getRequestMethod().equals("HEAD")) {
                    ex.sendResponseHeaders(200, -1);
                    return;
                }
                if (stall && path.startsWith("/chunks/")) {
                    stalled.incrementAndGet();
                    released.await(); // never answers while the test runs
                    return;
                }
                byte[] body = Files.readAllBytes(file);
                ex.sendResponseHeaders(200, body.length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(body);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close() {
            released.countDown();
            server.stop(0);
            executor.shutdownNow();
        }
    }
}
