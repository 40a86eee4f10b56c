package io.dsec.image.internal.fuse;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import io.dsec.DsecException;
import io.dsec.MissingPrerequisiteException;
import io.dsec.internal.nativeio.ErrnoException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A FUSE server that speaks the kernel protocol over /dev/fuse (no libfuse): a flat read-only directory of large
 * {@link FuseFile}s (EROFS layer images) that the host mounts EROFS from, or QEMU maps.
 *
 * <p>Worker threads block in read(2) on the one /dev/fuse fd, each with its own buffers; a slow {@link FuseFile} read
 * holds only its worker. A small static process, {@code dsec-fuse-holder}, keeps a copy of the fd: when the JVM dies the
 * connection lives on (requests wait), and {@link #reattach} in a new JVM takes the fd back with pidfd_getfd and asks
 * the kernel to resend the requests the dead JVM had read (FUSE_NOTIFY_RESEND). Inode numbers and file handles are
 * stable across JVMs (persisted in the state directory; handles are inode numbers).
 */
public final class FuseServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FuseServer.class);
    /** The largest READ: 256 pages of 4 KiB. */
    public static final int MAX_READ = 1 << 20;
    static final int MAX_PAGES = MAX_READ / 4096;
    static final int MAX_READAHEAD = MAX_READ;
    static final String FS_TYPE = "fuse.dsec";
    private static final int IN_BUFFER = FuseFilesystem.MAX_WRITE + 4096;
    private static final int OUT_BUFFER = MAX_READ + 4096;
    private static final long JOIN_MILLIS = 10_000;

    /** Counters since this server started: requests answered or taken, bytes returned by READ, failed requests. */
    public record Stats(long requests, long bytesRead, long errors) {
    }

    private final Path mountpoint;
    private final FuseState state;
    private final FuseFilesystem fs;
    private final int fd;
    private final FuseHolder holder;
    private final String device;
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    private FuseServer(Path mountpoint, FuseState state, FuseFilesystem fs, int fd, FuseHolder holder, String device) {
        this.mountpoint = mountpoint;
        this.state = state;
        this.fs = fs;
        this.fd = fd;
        this.holder = holder;
        this.device = device;
    }

    /**
     * Mounts an empty served directory at {@code mountpoint} (created when missing) and starts serving it with
     * {@code workerThreads} threads. {@code stateDir} keeps what {@link #reattach} needs; one state directory per mount.
     *
     * @throws MissingPrerequisiteException without /dev/fuse, FUSE in the kernel, or root
     */
    public static FuseServer mount(Path mountpoint, Path stateDir, int workerThreads) {
        requireRoot();
        checkWorkers(workerThreads);
        Path target = prepareMountpoint(mountpoint);
        MountEntry existing = MountEntry.of(target);
        if (existing != null && existing.fsType.startsWith("fuse")) {
            throw new DsecException(target + " is already a FUSE mount (" + existing.fsType + "): reattach to it with "
                + "FuseServer.reattach, or clean it up with FuseServer.destroyStale");
        }
        FuseState state = new FuseState(stateDir);
        FuseHolder stale = FuseHolder.find(state);
        if (stale != null) {
            throw new DsecException("an fd holder (pid " + stale.pid() + ") still runs for " + stateDir
                + ": reattach with FuseServer.reattach or clean up with FuseServer.destroyStale");
        }
        state.deleteInit();
        int fd = openDevice();
        FuseHolder holder = null;
        boolean mounted = false;
        try {
            holder = FuseHolder.spawn(state, fd);
            String options = "fd=" + fd + ",rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions,max_read=" + MAX_READ;
            try {
                FuseNative.mount("dsec", target, FS_TYPE, FuseNative.MS_RDONLY | FuseNative.MS_NOSUID | FuseNative.MS_NODEV, options);
            } catch (ErrnoException e) {
                throw mountFailure(e, target);
            }
            mounted = true;
            MountEntry entry = MountEntry.of(target);
            FuseServer server = new FuseServer(target, state, new FuseFilesystem(state, MAX_READAHEAD, MAX_PAGES), fd,
                holder, entry == null ? null : entry.device);
            server.start(workerThreads);
            server.raiseReadahead();
            LOG.info("FUSE server mounted at {} ({} workers, fd holder {})", target, workerThreads, holder.pid());
            return server;
        } catch (RuntimeException e) {
            if (mounted) {
                FuseNative.unmount(target, FuseNative.MNT_DETACH);
            }
            if (holder != null) {
                holder.stop();
            }
            FuseNative.closeQuietly(fd);
            throw e;
        }
    }

    /**
     * Takes over the connection at {@code mountpoint} after the JVM that served it died: takes the /dev/fuse fd back from
     * the holder named in {@code stateDir}, serves {@code files} (the same names as before keep their inodes), asks the
     * kernel to resend the requests the dead JVM had read but not answered, and starts the workers. Requests made while
     * no JVM served are answered too: they waited in the kernel's queue.
     *
     * @throws DsecException when nothing is mounted there or the holder is gone (the connection is lost: use
     *     {@link #destroyStale} and {@link #mount})
     */
    public static FuseServer reattach(Path mountpoint, Path stateDir, int workerThreads, Map<String, FuseFile> files) {
        requireRoot();
        checkWorkers(workerThreads);
        Path target = prepareMountpoint(mountpoint);
        MountEntry entry = MountEntry.of(target);
        if (entry == null || !entry.fsType.equals(FS_TYPE)) {
            throw new DsecException("nothing to reattach to: " + target + " is not a dsec FUSE mount"
                + (entry == null ? "" : " (it is " + entry.fsType + ")") + "; mount a new server with FuseServer.mount");
        }
        FuseState state = new FuseState(stateDir);
        FuseHolder holder = FuseHolder.find(state);
        if (holder == null) {
            throw new DsecException("no FUSE fd holder runs for " + stateDir + ": the connection at " + target
                + " is lost; clean it up with FuseServer.destroyStale and mount again");
        }
        int fd = holder.takeFd();
        try {
            FuseFilesystem fs = new FuseFilesystem(state, MAX_READAHEAD, MAX_PAGES);
            files.forEach(fs::add);
            FuseServer server = new FuseServer(target, state, fs, fd, holder, entry.device);
            // Resend first, then start: a request read by a new worker is never resent a second time.
            server.notifyResend();
            server.start(workerThreads);
            LOG.info("FUSE server reattached at {} ({} workers, fd holder {})", target, workerThreads, holder.pid());
            return server;
        } catch (RuntimeException e) {
            FuseNative.closeQuietly(fd);
            throw e;
        }
    }

    /**
     * Cleans up after a server that is gone and will not be reattached: detaches the mount at {@code mountpoint}, stops
     * the fd holder of {@code stateDir} and aborts the connection, so that processes waiting on it get an error.
     */
    public static void destroyStale(Path mountpoint, Path stateDir) {
        Path target = mountpoint.toAbsolutePath().normalize();
        MountEntry entry = MountEntry.of(target);
        if (entry != null && entry.fsType.startsWith("fuse")) {
            FuseNative.unmount(target, FuseNative.MNT_DETACH);
        }
        FuseState state = new FuseState(stateDir);
        FuseHolder holder = FuseHolder.find(state);
        if (holder != null) {
            holder.stop();
        }
        if (entry != null && entry.fsType.startsWith("fuse")) {
            abortConnection(entry.device);
        }
        state.deleteInit();
    }

    /** Serves {@code file} as {@code <mountpoint>/<name>}; {@code name} matches {@code [a-z0-9._-]+}. */
    public void add(String name, FuseFile file) {
        checkOpen();
        fs.add(name, file);
    }

    /** Stops serving {@code name}: it disappears from the directory at once. Files already open keep reading. */
    public void remove(String name) {
        checkOpen();
        if (fs.remove(name) != null) {
            notifyInvalEntry(name);
        }
    }

    /** Where {@code name} appears. */
    public Path pathOf(String name) {
        if (name == null || !FuseFilesystem.NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("bad FUSE file name '" + name + "': use [a-z0-9._-]+");
        }
        return mountpoint.resolve(name);
    }

    public Path mountpoint() {
        return mountpoint;
    }

    public Stats stats() {
        return new Stats(fs.requests.sum(), fs.bytesRead.sum(), fs.errors.sum());
    }

    /** What INIT negotiated, or null before INIT. */
    FuseCodec.Init negotiated() {
        return fs.init();
    }

    long holderPid() {
        return holder.pid();
    }

    /**
     * Unmounts (lazily, aborting the connection, when the mount is busy), stops the workers and the fd holder.
     * Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        int err = FuseNative.unmount(mountpoint, 0);
        if (err == FuseNative.EBUSY) {
            // An open file, a mapping, an EROFS mount on one of the files: detach, and abort the connection so that its
            // users get errors instead of waiting for a server that is leaving.
            LOG.warn("FUSE mount {} is busy: detaching it and aborting the connection", mountpoint);
            FuseNative.unmount(mountpoint, FuseNative.MNT_DETACH);
            abortConnection(device);
        } else if (err != 0) {
            LOG.warn("unmounting FUSE at {} failed: {}", mountpoint, FuseNative.describe(err));
        }
        // After the unmount the kernel ends the connection: read(2) fails with ENODEV and the workers return. Workers
        // that still run mean the connection lives on (unmounted elsewhere, or held by another namespace): the device
        // is still this connection's, so aborting it is safe.
        if (!joinWorkers()) {
            abortConnection(device);
            if (!joinWorkers()) {
                LOG.warn("FUSE workers of {} did not stop", mountpoint);
            }
        }
        FuseNative.closeQuietly(fd);
        holder.stop();
        state.deleteInit();
        LOG.info("FUSE server at {} closed: {}", mountpoint, stats());
    }

    private boolean joinWorkers() {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(JOIN_MILLIS);
        for (Thread worker : workers) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            try {
                worker.join(Math.max(1, left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return workers.stream().noneMatch(Thread::isAlive);
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the FUSE server at " + mountpoint + " is closed");
        }
    }

    private void start(int threads) {
        for (int i = 0; i < threads; i++) {
            Thread worker = new Thread(this::serve, "dsec-fuse-" + mountpoint.getFileName() + "-" + i);
            worker.setDaemon(true);
            workers.add(worker);
        }
        workers.forEach(Thread::start);
    }

    /** One worker: read a request, answer it, until the connection ends. */
    private void serve() {
        try (Memory inMemory = new Memory(IN_BUFFER); Memory outMemory = new Memory(OUT_BUFFER)) {
            ByteBuffer in = inMemory.getByteBuffer(0, IN_BUFFER).order(ByteOrder.nativeOrder());
            ByteBuffer out = outMemory.getByteBuffer(0, OUT_BUFFER).order(ByteOrder.nativeOrder());
            ByteBuffer data = outMemory.getByteBuffer(FuseCodec.OUT_HEADER, MAX_READ);
            while (true) {
                long n;
                try {
                    n = FuseNative.readRaw(fd, inMemory, IN_BUFFER);
                } catch (LastErrorException e) {
                    int errno = e.getErrorCode();
                    if (errno == FuseNative.EINTR || errno == FuseNative.ENOENT || errno == FuseNative.EAGAIN) {
                        continue; // interrupted, or the request went away while being read
                    }
                    if (errno != FuseNative.ENODEV && errno != FuseNative.ECONNABORTED) {
                        LOG.error("reading /dev/fuse for {} failed: {} (errno {}); this worker stops", mountpoint,
                            FuseNative.describe(errno), errno);
                    }
                    return;
                }
                if (n < FuseCodec.IN_HEADER) {
                    LOG.warn("short FUSE request ({} bytes) ignored", n);
                    continue;
                }
                int length = fs.handle(in, (int) n, out, data);
                if (length == 0) {
                    continue;
                }
                try {
                    FuseNative.writeRaw(fd, outMemory, length);
                } catch (LastErrorException e) {
                    int errno = e.getErrorCode();
                    if (errno == FuseNative.ENODEV || errno == FuseNative.ECONNABORTED) {
                        return;
                    }
                    if (errno != FuseNative.ENOENT) { // ENOENT: the request was interrupted and is gone
                        LOG.warn("FUSE reply to opcode {} failed: {} (errno {})", FuseCodec.opcode(in),
                            FuseNative.describe(errno), errno);
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            LOG.error("FUSE worker for {} died", mountpoint, e);
        }
    }

    private void notifyResend() {
        try (Memory buf = new Memory(FuseCodec.OUT_HEADER)) {
            int len = FuseCodec.putNotify(buf.getByteBuffer(0, FuseCodec.OUT_HEADER).order(ByteOrder.nativeOrder()),
                FuseCodec.NOTIFY_RESEND);
            FuseNative.writeRaw(fd, buf, len);
        } catch (LastErrorException e) {
            // A kernel without FUSE_NOTIFY_RESEND (before 6.9): requests the dead JVM had read stay unanswered.
            LOG.warn("FUSE_NOTIFY_RESEND failed ({}): requests the previous server had read will not be answered",
                FuseNative.describe(e.getErrorCode()));
        }
    }

    private void notifyInvalEntry(String name) {
        int size = FuseCodec.OUT_HEADER + 16 + name.length() + 1;
        try (Memory buf = new Memory(size)) {
            int len = FuseCodec.putInvalEntry(buf.getByteBuffer(0, size).order(ByteOrder.nativeOrder()), FuseCodec.ROOT_ID, name);
            FuseNative.writeRaw(fd, buf, len);
        } catch (LastErrorException e) {
            if (e.getErrorCode() != FuseNative.ENOENT) { // ENOENT: the kernel had not cached the name
                LOG.debug("invalidating {} in the kernel failed: {}", name, FuseNative.describe(e.getErrorCode()));
            }
        }
    }

    /** Raises the readahead of the mount's bdi to 1 MiB (INIT can only lower it); best effort. */
    private void raiseReadahead() {
        if (device == null) {
            return;
        }
        Path knob = Path.of("/sys/class/bdi", device, "read_ahead_kb");
        try {
            Files.writeString(knob, Integer.toString(MAX_READAHEAD / 1024));
        } catch (IOException e) {
            LOG.debug("cannot set {}: {}", knob, e.toString());
        }
    }

    /** Aborts the FUSE connection with device {@code major:minor} through fusectl (mounting fusectl if needed). */
    static void abortConnection(String device) {
        if (device == null) {
            return;
        }
        String[] mm = device.split(":");
        long id = (Long.parseLong(mm[0]) << 20) | Long.parseLong(mm[1]);
        Path connections = Path.of("/sys/fs/fuse/connections");
        try {
            if (Files.isDirectory(connections) && !MountEntry.isMounted(connections, "fusectl")) {
                FuseNative.mount("fusectl", connections, "fusectl", 0, null);
            }
            Path abort = connections.resolve(Long.toString(id)).resolve("abort");
            if (Files.exists(abort)) {
                Files.writeString(abort, "1");
            }
        } catch (IOException | DsecException e) {
            LOG.warn("cannot abort FUSE connection {}: {}", device, e.getMessage());
        }
    }

    private static void requireRoot() {
        if (FuseNative.geteuid() != 0) {
            throw new MissingPrerequisiteException("a FUSE server mounts with mount(2) and takes fds with pidfd_getfd: run as root");
        }
    }

    private static void checkWorkers(int workerThreads) {
        if (workerThreads < 1 || workerThreads > 1024) {
            throw new IllegalArgumentException("workerThreads must be 1..1024, not " + workerThreads);
        }
    }

    private static Path prepareMountpoint(Path mountpoint) {
        try {
            Files.createDirectories(mountpoint);
            return mountpoint.toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the FUSE mountpoint " + mountpoint, e);
        }
    }

    private static int openDevice() {
        Path dev = Path.of("/dev/fuse");
        if (!Files.exists(dev)) {
            throw new MissingPrerequisiteException("/dev/fuse does not exist: load FUSE with 'modprobe fuse' (the kernel needs "
                + "CONFIG_FUSE_FS); in a container, pass the device /dev/fuse");
        }
        try {
            return FuseNative.open(dev, FuseNative.O_RDWR | FuseNative.O_CLOEXEC);
        } catch (ErrnoException e) {
            if (e.errno() == 6 || e.errno() == FuseNative.ENODEV) { // ENXIO/ENODEV: no driver behind the node
                throw new MissingPrerequisiteException("the kernel lacks FUSE (CONFIG_FUSE_FS): modprobe fuse", e);
            }
            if (e.errno() == FuseNative.EACCES || e.errno() == FuseNative.EPERM) {
                throw new MissingPrerequisiteException("cannot open /dev/fuse: run as root", e);
            }
            throw e;
        }
    }

    private static DsecException mountFailure(ErrnoException e, Path target) {
        if (e.errno() == FuseNative.ENODEV) {
            return new MissingPrerequisiteException("the kernel lacks FUSE (CONFIG_FUSE_FS): modprobe fuse", e);
        }
        if (e.errno() == FuseNative.EPERM) {
            return new MissingPrerequisiteException("mounting FUSE at " + target + " needs CAP_SYS_ADMIN: run as root", e);
        }
        return new DsecException("cannot mount the FUSE server at " + target + ": " + e.getMessage(), e);
    }

    /** One line of /proc/self/mountinfo: the top-most mount at a path. */
    record MountEntry(String device, String fsType) {
        static MountEntry of(Path target) {
            MountEntry found = null;
            for (String[] f : lines()) {
                if (f.length > 4 && unescape(f[4]).equals(target.toString())) {
                    int dash = List.of(f).indexOf("-");
                    found = new MountEntry(f[2], dash > 0 && dash + 1 < f.length ? f[dash + 1] : "");
                }
            }
            return found;
        }

        static boolean isMounted(Path target, String fsType) {
            MountEntry entry = of(target);
            return entry != null && entry.fsType.equals(fsType);
        }

        private static List<String[]> lines() {
            try {
                return Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8).stream()
                    .map(l -> l.split(" ")).toList();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private static String unescape(String s) {
            if (s.indexOf('\\') < 0) {
                return s;
            }
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '\\' && i + 3 < s.length()) {
                    sb.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                    i += 3;
                } else {
                    sb.append(c);
                }
            }
            return sb.toString();
        }
    }
}
