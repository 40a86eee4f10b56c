package io.dsec.internal.layer;

import io.dsec.DsecException;
import io.dsec.Layer;
import io.dsec.spi.LayerStore;
import io.dsec.internal.nativeio.ErrnoException;
import io.dsec.internal.nativeio.Posix;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Host-wide, reference-counted read-only mounts of layers. The first {@link #acquire(Layer)} of a layer mounts its
 * EROFS image (the store's {@link LayerStore#mountSource(Layer) mount source}, a file: no loop device) at
 * {@code <stateDir>/mounts/<hex>}; later acquires share the mount; the last release unmounts it and removes the
 * directory. Concurrent acquires of one layer mount it once; acquires of different layers run in parallel (each layer
 * has its own lock).
 *
 * <p>One {@code LayerMounts} owns {@code <stateDir>/mounts}: a state directory belongs to one process at a time.
 */
public final class LayerMounts implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LayerMounts.class);
    private static final long MOUNT_FLAGS = Posix.MS_RDONLY | Posix.MS_NODEV;
    private static final int ENOTBLK = 15;
    private static final long EROFS_SUPER_OFFSET = 1024;
    private static final int EROFS_SUPER_MAGIC = 0xE0F5E1E2;

    private final LayerStore store;
    private final Path mountsDir;
    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    private final AtomicLong sequence = new AtomicLong();
    private volatile boolean closed;

    /** One mounted layer; guarded by its own monitor. */
    static final class Entry {
        final Layer layer;
        final Path path;
        int refs;
        boolean mounted;
        /** Unmounted (or never mounted) and out of the map: acquires make a new entry. */
        boolean dead;
        long order;

        Entry(Layer layer, Path path) {
            this.layer = layer;
            this.path = path;
        }
    }

    /** Mounts layers of {@code store} under {@code <stateDir>/mounts}. */
    public LayerMounts(LayerStore store, Path stateDir) {
        this.store = Objects.requireNonNull(store, "store");
        Path dir = stateDir.resolve("mounts");
        try {
            Files.createDirectories(dir);
            // mountinfo shows real paths: resolve symlinks so that mount points compare equal.
            this.mountsDir = dir.toRealPath();
        } catch (IOException e) {
            throw new LayerMountException("could not create " + dir + " for layer mounts: " + e.getMessage()
                + "; check that the state directory is writable", e);
        }
    }

    /** {@code <stateDir>/mounts}. */
    public Path mountsDirectory() {
        return mountsDir;
    }

    /** How many layers are mounted now. */
    public int mountedCount() {
        return (int) entries.values().stream().filter(e -> {
            synchronized (e) {
                return e.mounted && !e.dead;
            }
        }).count();
    }

    /**
     * Mounts {@code layer} read-only (or shares the mount that exists) and returns a use of it; close the use when done.
     *
     * @throws LayerMountException when the mount fails; the message says what to check
     */
    public MountedLayer acquire(Layer layer) {
        Objects.requireNonNull(layer, "layer");
        while (true) {
            checkOpen();
            Entry entry = entries.computeIfAbsent(layer.hex(), hex -> new Entry(layer, mountsDir.resolve(hex)));
            synchronized (entry) {
                if (entry.dead) {
                    continue; // released and unmounted since we found it; make a new one
                }
                if (!entry.mounted) {
                    try {
                        checkOpen();
                        mount(entry);
                    } catch (RuntimeException e) {
                        entry.dead = true;
                        entries.remove(layer.hex(), entry);
                        throw e;
                    }
                    entry.mounted = true;
                    entry.order = sequence.incrementAndGet();
                }
                entry.refs++;
                return new MountedLayer(this, entry);
            }
        }
    }

    void release(Entry entry) {
        synchronized (entry) {
            if (entry.dead) {
                return; // close() unmounted it already
            }
            if (--entry.refs > 0) {
                return;
            }
            entry.dead = true;
            entries.remove(entry.path.getFileName().toString(), entry);
            unmountAndRemove(entry.path);
            store.released(entry.layer);
        }
    }

    /**
     * Unmounts every layer still mounted, the most recently mounted first, whatever uses remain. Failures are collected:
     * the first is thrown with the others suppressed. Closing again does nothing.
     */
    @Override
    public void close() {
        closed = true;
        List<Entry> snapshot = new ArrayList<>(entries.values());
        snapshot.sort(Comparator.comparingLong((Entry e) -> e.order).reversed());
        List<RuntimeException> failures = new ArrayList<>();
        for (Entry entry : snapshot) {
            synchronized (entry) {
                if (entry.dead) {
                    continue;
                }
                entry.dead = true;
                entries.remove(entry.path.getFileName().toString(), entry);
                if (!entry.mounted) {
                    continue;
                }
                try {
                    unmountAndRemove(entry.path);
                    store.released(entry.layer);
                } catch (RuntimeException e) {
                    failures.add(e);
                }
            }
        }
        if (!failures.isEmpty()) {
            LayerMountException first = new LayerMountException("could not unmount " + failures.size() + " layer(s) under "
                + mountsDir + ": " + failures.get(0).getMessage(), failures.get(0));
            failures.stream().skip(1).forEach(first::addSuppressed);
            throw first;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new DsecException("the layer mounts of " + mountsDir + " are closed: the sandbox host was closed");
        }
    }

    private void mount(Entry entry) {
        Path source = store.mountSource(entry.layer);
        Path target = entry.path;
        try {
            Files.createDirectories(target);
        } catch (IOException e) {
            throw new LayerMountException("could not create the mount point " + target + ": " + e.getMessage(), e);
        }
        // A mount left here by a JVM that died is unmounted, not reused: this process cannot know whether it is the
        // same image (or how many uses it has), and a lazy detach is harmless to anything still using it (sandboxes
        // of the dead JVM keep their overlays, which hold their own references to the lower layers).
        for (int i = 0; i < 64 && MountTable.isMountPoint(target); i++) {
            LOG.info("unmounting the stale layer mount {} left by an earlier process", target);
            try {
                Posix.unmount(target, Posix.MNT_DETACH);
            } catch (ErrnoException e) {
                throw new LayerMountException("could not unmount the stale mount " + target + " left by an earlier process: "
                    + e.getMessage() + "; unmount it by hand (umount -l " + target + ")", e);
            }
        }
        try {
            Posix.mount(source.toString(), target, "erofs", MOUNT_FLAGS, null);
        } catch (ErrnoException e) {
            deleteDirQuietly(target);
            throw new LayerMountException("could not mount layer " + entry.layer.reference() + " (" + entry.layer.digest()
                + ") from " + source + " at " + target + ": " + e.getMessage() + "; " + hint(e.errno(), source), e);
        }
        LOG.debug("mounted layer {} at {}", entry.layer.reference(), target);
    }

    private static String hint(int errno, Path source) {
        switch (errno) {
            case Posix.EPERM:
                return "mounting needs root (CAP_SYS_ADMIN): run as root";
            case Posix.ENOENT:
                return "the image file or the mount point is missing: check " + source;
            case Posix.ENODEV:
                return "the kernel lacks EROFS (CONFIG_EROFS_FS): modprobe erofs, or use a kernel >= 6.12 built with it";
            case ENOTBLK:
                return "the kernel lacks EROFS file-backed mounts (CONFIG_EROFS_FS_BACKED_BY_FILE, kernel >= 6.12)";
            case Posix.EINVAL:
                if (!hasErofsMagic(source)) {
                    return "the image is not a valid EROFS image (corrupt or truncated): delete " + source
                        + " and build the layer again";
                }
                return "the kernel lacks EROFS file-backed mounts (CONFIG_EROFS_FS, kernel >= 6.12), or the image is "
                    + "corrupt: see dmesg";
            default:
                return "check dmesg, and that " + source + " is an EROFS image";
        }
    }

    /** True when {@code image} has the EROFS superblock magic at 1024. */
    static boolean hasErofsMagic(Path image) {
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.READ)) {
            ByteBuffer magic = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            while (magic.hasRemaining()) {
                if (channel.read(magic, EROFS_SUPER_OFFSET + magic.position()) < 0) {
                    return false;
                }
            }
            return magic.getInt(0) == EROFS_SUPER_MAGIC;
        } catch (IOException e) {
            return false;
        }
    }

    private static void unmountAndRemove(Path target) {
        try {
            Posix.unmount(target, 0);
        } catch (ErrnoException e) {
            if (e.errno() == Posix.EBUSY) {
                // Something still has a file open or its cwd in the layer: detach it from the tree now; the kernel
                // frees it when the last user goes.
                LOG.warn("layer mount {} is busy; detaching it lazily", target);
                try {
                    Posix.unmount(target, Posix.MNT_DETACH);
                } catch (ErrnoException e2) {
                    throw new LayerMountException("could not unmount " + target + ": " + e2.getMessage()
                        + "; unmount it by hand (umount -l " + target + ")", e2);
                }
            } else if (!(e.errno() == Posix.EINVAL && !MountTable.isMountPoint(target))) {
                throw new LayerMountException("could not unmount " + target + ": " + e.getMessage()
                    + "; unmount it by hand (umount -l " + target + ")", e);
            }
        }
        deleteDirQuietly(target);
    }

    private static void deleteDirQuietly(Path dir) {
        try {
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            LOG.warn("could not remove the mount point {}: {}", dir, e.toString());
        }
    }
}
