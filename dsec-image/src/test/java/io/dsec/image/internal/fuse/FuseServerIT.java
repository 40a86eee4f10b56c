package io.dsec.image.internal.fuse;

import static io.dsec.image.internal.fuse.TestFuseFiles.pattern;
import static io.dsec.image.internal.fuse.TestFuseFiles.readRange;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.internal.layer.ErofsImageBuilder;
import io.dsec.internal.nativeio.Posix;
import io.dsec.spi.LayerStore.BuiltImage;
import io.dsec.testing.Capabilities;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FuseServerIT {
    private static final int MIB = 1 << 20;

    @TempDir
    Path tmp;
    private Path mnt;
    private Path state;
    private FuseServer server;
    /** Run after each test, last first, even when it fails: unmounts, latches, child JVMs. */
    private final Deque<AutoCloseable> cleanups = new ArrayDeque<>();

    @BeforeEach
    void setUp() {
        Capabilities.requireRoot();
        Capabilities.require(Files.exists(Path.of("/dev/fuse")), "needs /dev/fuse: modprobe fuse");
        mnt = tmp.resolve("mnt");
        state = tmp.resolve("state");
    }

    @AfterEach
    void tearDown() throws Exception {
        while (!cleanups.isEmpty()) {
            try {
                cleanups.pop().close();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
        if (server != null) {
            server.close();
        }
        FuseServer.destroyStale(mnt, state); // whatever is left: mount, holder, connection
        assertThat(fuseMountedAt(mnt)).as("still mounted after the test").isFalse();
    }

    private FuseServer mount(int workers) {
        server = FuseServer.mount(mnt, state, workers);
        return server;
    }

    @Test
    void listsStatsAndReadsFiles() throws Exception {
        mount(4);
        byte[] small = new byte[3 * MIB + 123];
        new Random(1).nextBytes(small);
        long bigSize = 10L * MIB + 7;
        java.util.concurrent.atomic.AtomicInteger largestRead = new java.util.concurrent.atomic.AtomicInteger();
        FuseFile big = pattern(bigSize);
        server.add("b.img", new FuseFile() {
            @Override
            public long size() {
                return bigSize;
            }

            @Override
            public void read(long offset, ByteBuffer into) throws FuseErrnoException {
                largestRead.accumulateAndGet(into.remaining(), Math::max);
                big.read(offset, into);
            }
        });
        server.add("a.img", TestFuseFiles.bytes(small));
        server.add("empty", TestFuseFiles.bytes(new byte[0]));

        try (Stream<Path> list = Files.list(mnt)) {
            assertThat(list.map(p -> p.getFileName().toString()).sorted()).containsExactly("a.img", "b.img", "empty");
        }
        assertThat(Files.size(server.pathOf("a.img"))).isEqualTo(small.length);
        assertThat(Files.size(server.pathOf("b.img"))).isEqualTo(bigSize);
        assertThat(Files.size(server.pathOf("empty"))).isZero();
        assertThat(Files.exists(mnt.resolve("missing"))).isFalse();
        PosixFileAttributes attrs = Files.readAttributes(server.pathOf("a.img"), PosixFileAttributes.class);
        assertThat(PosixFilePermissions.toString(attrs.permissions())).isEqualTo("r--r--r--");
        assertThat(attrs.owner().getName()).isEqualTo("root");
        assertThat(attrs.isRegularFile()).isTrue();
        assertThat(PosixFilePermissions.toString(Files.readAttributes(mnt, PosixFileAttributes.class).permissions()))
            .isEqualTo("r-xr-xr-x");

        assertThat(Files.readAllBytes(server.pathOf("a.img"))).isEqualTo(small);
        assertThat(Files.readAllBytes(server.pathOf("empty"))).isEmpty();

        Random random = new Random(2);
        for (int i = 0; i < 200; i++) {
            long offset = (long) (random.nextDouble() * bigSize);
            int length = random.nextInt(256 * 1024) + 1;
            int expected = (int) Math.min(length, bigSize - offset);
            assertThat(readRange(server.pathOf("b.img"), offset, length)).as("range %d+%d", offset, length)
                .isEqualTo(pattern(offset, expected));
        }
        for (long offset : new long[] {1, 4095, 3 * MIB + 17, bigSize - MIB - 1}) {
            assertThat(readRange(server.pathOf("b.img"), offset, MIB)).as("1 MiB at %d", offset).isEqualTo(pattern(offset, MIB));
        }
        // EOF: a read across the end is short, a read at the end returns nothing.
        assertThat(readRange(server.pathOf("b.img"), bigSize - 10, MIB)).isEqualTo(pattern(bigSize - 10, 10));
        try (FileChannel channel = FileChannel.open(server.pathOf("b.img"))) {
            assertThat(channel.read(ByteBuffer.allocate(10), bigSize)).isEqualTo(-1);
            assertThat(channel.read(ByteBuffer.allocate(10), bigSize + MIB)).isEqualTo(-1);
        }
        assertThatThrownBy(() -> Files.newOutputStream(server.pathOf("a.img"), StandardOpenOption.WRITE))
            .isInstanceOf(IOException.class);

        // Direct I/O is split only at max_read / max_pages: one 2 MiB read gives READs of exactly 1 MiB.
        largestRead.set(0);
        try (FileChannel direct = FileChannel.open(server.pathOf("b.img"), StandardOpenOption.READ,
            com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
            ByteBuffer aligned = ByteBuffer.allocateDirect(3 * MIB).alignedSlice(4096).limit(2 * MIB);
            assertThat(direct.read(aligned, 4L * MIB)).isEqualTo(2 * MIB);
            byte[] got = new byte[2 * MIB];
            aligned.flip().get(got);
            assertThat(got).isEqualTo(pattern(4L * MIB, 2 * MIB));
        }
        assertThat(largestRead.get()).as("READs of up to 1 MiB (max_pages 256)").isEqualTo(MIB);

        FuseCodec.Init init = server.negotiated();
        assertThat(init).isNotNull();
        assertThat(init.has(FuseCodec.MAX_PAGES)).isTrue();
        assertThat(init.maxPages()).isEqualTo(256);
        assertThat(init.has(FuseCodec.ASYNC_READ)).isTrue();
        assertThat(init.has(FuseCodec.HAS_RESEND)).as("kernel 6.9+ offers FUSE_HAS_RESEND").isTrue();
        FuseServer.Stats stats = server.stats();
        assertThat(stats.requests()).isPositive();
        assertThat(stats.bytesRead()).isGreaterThanOrEqualTo(small.length);
        assertThat(stats.errors()).isZero();
    }

    @Test
    void concurrentReadersAndASlowFileDoNotBlockEachOther() throws Exception {
        mount(4);
        long size = 32L * MIB;
        server.add("data.img", pattern(size));
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        cleanups.push(gate::countDown); // never leave a worker (and the unmount) waiting
        server.add("slow.img", TestFuseFiles.gated(4 * MIB, 0, 4 * MIB, gate, entered::countDown));

        ExecutorService pool = Executors.newFixedThreadPool(9);
        cleanups.push(pool::shutdownNow);
        Future<byte[]> slow = pool.submit(() -> readRange(server.pathOf("slow.img"), 12345, 64 * 1024));
        assertThat(entered.await(60, TimeUnit.SECONDS)).as("the slow read reached the server").isTrue();

        List<Future<Integer>> readers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            int seed = t;
            readers.add(pool.submit(() -> {
                Random random = new Random(seed);
                int checked = 0;
                for (int i = 0; i < 40; i++) {
                    long offset = (long) (random.nextDouble() * (size - MIB));
                    int length = random.nextInt(MIB) + 1;
                    assertThat(readRange(server.pathOf("data.img"), offset, length)).isEqualTo(pattern(offset, length));
                    checked++;
                }
                return checked;
            }));
        }
        for (Future<Integer> reader : readers) {
            assertThat(reader.get(120, TimeUnit.SECONDS)).isEqualTo(40);
        }
        assertThat(slow.isDone()).as("the slow read waits for its gate").isFalse();
        gate.countDown();
        assertThat(slow.get(60, TimeUnit.SECONDS)).isEqualTo(pattern(12345, 64 * 1024));
    }

    @Test
    void aFailingFileGivesEioAndTheServerKeepsServing() throws Exception {
        mount(2);
        byte[] content = new byte[2 * MIB];
        new Random(3).nextBytes(content);
        server.add("bad.img", TestFuseFiles.failing(content, MIB, FuseErrnoException.EIO));
        server.add("good.img", TestFuseFiles.bytes(content));

        assertThat(readRange(server.pathOf("bad.img"), 0, 4096)).isEqualTo(java.util.Arrays.copyOf(content, 4096));
        assertThatThrownBy(() -> Files.readAllBytes(server.pathOf("bad.img")))
            .isInstanceOf(IOException.class).hasMessageContaining("Input/output error");
        assertThat(Files.readAllBytes(server.pathOf("good.img"))).isEqualTo(content);
        assertThat(server.stats().errors()).isPositive();
    }

    @Test
    void erofsMountsFromAServedImage() throws Exception {
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        Path tree = tmp.resolve("tree");
        byte[] data = new byte[3 * MIB + 5];
        new Random(4).nextBytes(data);
        TestFuseFiles.write(tree.resolve("hello.txt"), "hello from erofs over fuse\n".getBytes(StandardCharsets.UTF_8));
        TestFuseFiles.write(tree.resolve("dir/data.bin"), data);
        Path staging = Files.createDirectories(tmp.resolve("staging"));
        BuiltImage image = new ErofsImageBuilder().fromDirectory(tree, staging);

        mount(4);
        server.add("layer.erofs", TestFuseFiles.local(image.file()));
        Path erofs = Files.createDirectories(tmp.resolve("erofs"));
        Posix.mount(server.pathOf("layer.erofs").toString(), erofs, "erofs", Posix.MS_RDONLY, null);
        cleanups.push(() -> Posix.unmount(erofs, Posix.MNT_DETACH));
        try {
            assertThat(Files.readString(erofs.resolve("hello.txt"))).isEqualTo("hello from erofs over fuse\n");
            assertThat(Files.readAllBytes(erofs.resolve("dir/data.bin"))).isEqualTo(data);
        } finally {
            Posix.unmount(erofs, 0);
            cleanups.pop();
        }
    }

    @Test
    void mmapReadsTheServedBytes() throws Exception {
        mount(2);
        long size = 8L * MIB + 100;
        server.add("map.img", pattern(size));
        try (FileChannel channel = FileChannel.open(server.pathOf("map.img"), StandardOpenOption.READ)) {
            MappedByteBuffer map = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
            Random random = new Random(5);
            for (int i = 0; i < 1000; i++) {
                int at = random.nextInt((int) size);
                assertThat(map.get(at)).as("byte %d", at).isEqualTo(TestFuseFiles.patternByte(at));
            }
            assertThat(map.get((int) size - 1)).isEqualTo(TestFuseFiles.patternByte(size - 1));
        }
    }

    @Test
    void removeHidesANameAndCloseUnmountsAndStopsTheHolder() throws Exception {
        mount(2);
        server.add("a.img", TestFuseFiles.bytes("first".getBytes(StandardCharsets.US_ASCII)));
        server.add("b.img", TestFuseFiles.bytes("bee".getBytes(StandardCharsets.US_ASCII)));
        assertThat(Files.readString(server.pathOf("a.img"))).isEqualTo("first");

        server.remove("a.img");
        assertThat(Files.exists(server.pathOf("a.img"))).isFalse();
        try (Stream<Path> list = Files.list(mnt)) {
            assertThat(list.map(p -> p.getFileName().toString())).containsExactly("b.img");
        }
        server.add("a.img", TestFuseFiles.bytes("second!".getBytes(StandardCharsets.US_ASCII)));
        assertThat(Files.readString(server.pathOf("a.img"))).isEqualTo("second!");

        long holder = server.holderPid();
        assertThat(running(holder)).isTrue();
        assertThat(fuseMountedAt(mnt)).isTrue();
        server.close();
        server.close(); // idempotent
        assertThat(fuseMountedAt(mnt)).isFalse();
        assertThat(exited(holder)).as("holder %d", holder).isTrue();
        assertThatThrownBy(() -> server.add("c.img", TestFuseFiles.bytes(new byte[1]))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void reattachesAfterTheServingJvmDies() throws Exception {
        long size = 64L * MIB;
        long slowOffset = 32L * MIB;
        Path log = tmp.resolve("child.log");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process child = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
            FuseServerChild.class.getName(), mnt.toString(), state.toString(), Long.toString(size),
            Long.toString(slowOffset), Long.toString(MIB))
            .redirectError(log.toFile()).start();
        cleanups.push(child::destroyForcibly);
        BufferedReader childOut = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(awaitLine(childOut, "READY")).as("child log: %s", lazyLog(log)).isTrue();
        Path file = mnt.resolve("layer.img");
        assertThat(readRange(file, 0, 2 * MIB)).isEqualTo(pattern(0, 2 * MIB));

        // A read that the child takes but never answers: it is in the kernel's processing queue when the child dies.
        AtomicReference<Object> slowResult = new AtomicReference<>();
        Thread slowReader = new Thread(() -> {
            try {
                slowResult.set(readRange(file, slowOffset + 4096, 64 * 1024));
            } catch (Throwable e) {
                slowResult.set(e);
            }
        }, "slow-reader");
        slowReader.setDaemon(true);
        slowReader.start();
        assertThat(awaitLine(childOut, "BLOCKED")).as("child log: %s", lazyLog(log)).isTrue();

        long holderPid = Long.parseLong(Files.readString(state.resolve("holder")).trim().split(" ")[0]);
        child.destroyForcibly();
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(running(holderPid)).as("the holder outlives the JVM").isTrue();
        assertThat(fuseMountedAt(mnt)).isTrue();
        assertThat(slowReader.isAlive()).as("no server answers the read").isTrue();
        // A read made while no JVM serves: it waits in the kernel's pending queue.
        AtomicReference<Object> pendingResult = new AtomicReference<>();
        Thread pendingReader = new Thread(() -> {
            try {
                pendingResult.set(readRange(file, 56L * MIB + 1, 300_000));
            } catch (Throwable e) {
                pendingResult.set(e);
            }
        }, "pending-reader");
        pendingReader.setDaemon(true);
        pendingReader.start();

        server = FuseServer.reattach(mnt, state, 2, Map.of("layer.img", pattern(size)));
        assertThat(server.holderPid()).isEqualTo(holderPid);
        slowReader.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(slowReader.isAlive()).as("the resent read was answered").isFalse();
        assertThat(slowResult.get()).isInstanceOf(byte[].class).isEqualTo(pattern(slowOffset + 4096, 64 * 1024));
        pendingReader.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(pendingReader.isAlive()).as("the queued read was answered").isFalse();
        assertThat(pendingResult.get()).isInstanceOf(byte[].class).isEqualTo(pattern(56L * MIB + 1, 300_000));

        assertThat(Files.size(file)).isEqualTo(size);
        assertThat(readRange(file, 48L * MIB + 3, MIB)).isEqualTo(pattern(48L * MIB + 3, MIB));
        assertThat(readRange(file, 5, 1000)).isEqualTo(pattern(5, 1000));
        try (Stream<Path> list = Files.list(mnt)) {
            assertThat(list.map(p -> p.getFileName().toString())).containsExactly("layer.img");
        }

        server.close();
        assertThat(fuseMountedAt(mnt)).isFalse();
        assertThat(exited(holderPid)).isTrue();
    }

    @Test
    void closeWhileBusyDetachesAndAbortsTheConnection() throws Exception {
        mount(2);
        server.add("open.img", pattern(4 * MIB));
        try (FileChannel channel = FileChannel.open(server.pathOf("open.img"), StandardOpenOption.READ)) {
            assertThat(channel.read(ByteBuffer.allocate(100), 0)).isEqualTo(100);
            long holder = server.holderPid();
            server.close();
            assertThat(fuseMountedAt(mnt)).isFalse();
            assertThat(exited(holder)).isTrue();
            assertThatThrownBy(() -> channel.read(ByteBuffer.allocate(100), 2 * MIB))
                .as("the open file of an aborted connection fails").isInstanceOf(IOException.class);
        }
    }

    @Test
    void reattachWithoutAMountFails() {
        assertThatThrownBy(() -> FuseServer.reattach(mnt, state, 1, Map.of()))
            .isInstanceOf(io.dsec.DsecException.class).hasMessageContaining("not a dsec FUSE mount");
    }

    private static boolean awaitLine(BufferedReader reader, String expected) throws IOException {
        String line;
        while ((line = reader.readLine()) != null) {
            if (line.equals(expected)) {
                return true;
            }
        }
        return false;
    }

    private static Object lazyLog(Path log) {
        return new Object() {
            @Override
            public String toString() {
                try {
                    return Files.readString(log);
                } catch (IOException e) {
                    return e.toString();
                }
            }
        };
    }

    static boolean fuseMountedAt(Path mountpoint) throws IOException {
        String target = mountpoint.toAbsolutePath().normalize().toString();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] f = line.split(" ");
            int dash = List.of(f).indexOf("-");
            if (f[4].equals(target) && dash > 0 && f[dash + 1].startsWith("fuse")) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code pid} runs; a zombie does not (nobody may reap an orphaned holder promptly). */
    static boolean running(long pid) throws IOException {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return stat.charAt(stat.lastIndexOf(')') + 2) != 'Z';
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        }
    }

    /** Polls (up to 10 s) for {@code pid} to stop running; a process that was just signalled may still be exiting. */
    static boolean exited(long pid) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (running(pid)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }
}
