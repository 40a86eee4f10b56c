package io.dsec.image.internal.cache;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A host-wide cache of verified chunks on local disk, within a budget of bytes:
 *
 * <pre>
 * &lt;dir&gt;/chunks/&lt;hex&gt;   one verified chunk, named by the sha256 of its bytes, read-only once in place
 * &lt;dir&gt;/tmp/            chunks being written; renamed into chunks/ when complete, emptied on open
 * &lt;dir&gt;/lock            held (flock) while a cache is open, so one process at a time uses the directory
 * </pre>
 *
 * <p><b>Index.</b> The files are the index: on open the cache lists {@code chunks/} and stats every file (one
 * readdir and one stat per chunk; measured for 100k chunks on ext4: 0.3-0.6 s with a warm inode cache,
 * 1-2 s cold), ordering them by modification time. There is no
 * journal to get out of step with the files, and because every chunk is written to {@code tmp/} and renamed, a crash
 * never leaves a partial chunk under its name. Chunks are not fsynced (it is a cache); instead a chunk found on disk at
 * open is verified against its name the first time it is read in this process, and dropped if it does not match.
 *
 * <p><b>Eviction and what "needs now" means.</b> Within a process the order is exact LRU by last access (a read or a
 * put). Across restarts it is the files' modification times: the cache sets a chunk's mtime when it writes it and,
 * at most once per {@code touchInterval}, when it is read. Nothing is pinned because a layer is mounted: a chunk is
 * needed now only while a {@link Chunk} lease on it is open, which the reader holds for the duration of one read;
 * leased chunks are skipped by eviction. A chunk of a mounted layer that was evicted is simply fetched again (and the
 * kernel keeps its page cache of the image meanwhile). A lease can also be held longer to keep a chunk deliberately.
 *
 * <p><b>Full.</b> {@link #put} evicts least recently used unleased chunks until the new chunk fits the budget. If
 * it cannot (the chunk is larger than the budget, or leased chunks fill it), or the filesystem refuses the write even
 * after evicting more (ENOSPC), it throws {@link ChunkCacheException}, having removed its temporary file.
 *
 * <p>Sizes count file lengths; the disk use is somewhat higher by the filesystem's block rounding. All methods are
 * safe for concurrent use. Caffeine is not used: its eviction is asynchronous and cannot skip leased entries, while a
 * lock around an access-ordered map is exact and cheap at one operation per chunk access.
 */
public final class ChunkCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChunkCache.class);
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");

    private final Path dir;
    private final Path chunks;
    private final Path tmp;
    private final long budgetBytes;
    private final Clock clock;
    private final long touchIntervalMillis;
    private final FileChannel lockChannel;
    private final FileLock lock;

    // Guarded by this. Access order: eldest first.
    private final LinkedHashMap<String, Entry> index = new LinkedHashMap<>(1024, 0.75f, true);
    private long usedBytes;
    private long reservedBytes;
    private long evictions;
    private boolean closed;

    /** One chunk on disk. Fields other than the final ones are guarded by the cache. */
    private static final class Entry {
        final String hex;
        final long size;
        int leases;
        volatile boolean verified;
        volatile long touchedMillis;

        Entry(String hex, long size, boolean verified, long touchedMillis) {
            this.hex = hex;
            this.size = size;
            this.verified = verified;
            this.touchedMillis = touchedMillis;
        }
    }

    /** A cache under {@code dir} (created when missing) holding at most {@code budgetBytes}. */
    public ChunkCache(Path dir, long budgetBytes) {
        this(dir, budgetBytes, Clock.systemUTC(), Duration.ofMinutes(1));
    }

    /**
     * @param clock         for modification times, which order eviction across restarts
     * @param touchInterval how stale a chunk's mtime may get before a read refreshes it (zero: every read)
     */
    public ChunkCache(Path dir, long budgetBytes, Clock clock, Duration touchInterval) {
        if (budgetBytes <= 0) {
            throw new IllegalArgumentException("chunk cache budget must be positive, got " + budgetBytes);
        }
        this.dir = dir.toAbsolutePath().normalize();
        this.chunks = this.dir.resolve("chunks");
        this.tmp = this.dir.resolve("tmp");
        this.budgetBytes = budgetBytes;
        this.clock = clock;
        this.touchIntervalMillis = touchInterval.toMillis();
        FileChannel channel = null;
        try {
            Files.createDirectories(chunks);
            Files.createDirectories(tmp);
            channel = FileChannel.open(this.dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock l;
            try {
                l = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                l = null;
            }
            if (l == null) {
                throw new IllegalStateException("chunk cache " + this.dir + " is in use by another cache (this or"
                    + " another process); give each host process its own cache directory");
            }
            this.lockChannel = channel;
            this.lock = l;
            cleanTmp();
            scan();
        } catch (IOException e) {
            closeQuietly(channel);
            throw new UncheckedIOException("cannot open chunk cache " + this.dir + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    public Path directory() {
        return dir;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    public synchronized long usedBytes() {
        return usedBytes;
    }

    public synchronized int chunkCount() {
        return index.size();
    }

    public synchronized long evictions() {
        return evictions;
    }

    /** Whether the chunk is cached; does not count as an access. */
    public synchronized boolean contains(String hex) {
        return index.containsKey(hex);
    }

    /** Cached chunks, least recently used first (for tests and diagnostics). */
    synchronized List<String> lruOrder() {
        return new ArrayList<>(index.keySet());
    }

    /**
     * A lease on a cached chunk, which counts as an access and keeps the chunk from eviction until closed; empty when
     * the chunk is not cached. Read it with {@link Chunk#read}; if that fails, {@link Chunk#invalidate} drops it.
     */
    public Optional<Chunk> open(String hex) {
        Entry e;
        synchronized (this) {
            if (closed) {
                return Optional.empty();
            }
            e = index.get(hex);
            if (e == null) {
                return Optional.empty();
            }
            e.leases++;
        }
        touch(e);
        return Optional.of(new Chunk(e));
    }

    /** The whole chunk if cached and readable; a chunk that cannot be read is dropped. */
    public Optional<byte[]> readAll(String hex) {
        Optional<Chunk> lease = open(hex);
        if (lease.isEmpty()) {
            return Optional.empty();
        }
        try (Chunk c = lease.get()) {
            ByteBuffer buf = ByteBuffer.allocate(Math.toIntExact(c.size()));
            try {
                c.read(0, buf);
                return Optional.of(buf.array());
            } catch (IOException e) {
                LOG.warn("dropping cached chunk {}: {}", hex, e.getMessage());
                c.invalidate();
                return Optional.empty();
            }
        }
    }

    /**
     * Stores a chunk whose bytes the caller has verified against {@code hex}. A chunk already cached is left as is.
     *
     * @throws ChunkCacheException when it does not fit (see the class comment); nothing is left behind
     */
    public void put(String hex, byte[] bytes) throws ChunkCacheException {
        if (!HEX.matcher(hex).matches()) {
            throw new IllegalArgumentException("not a sha256 hex digest: " + hex);
        }
        long size = bytes.length;
        synchronized (this) {
            checkOpen();
            Entry existing = index.get(hex);
            if (existing != null) {
                return;
            }
            if (size > budgetBytes) {
                throw new ChunkCacheException("chunk cache " + dir + " cannot hold chunk " + hex + ": it is " + size
                    + " bytes, more than the whole cache budget of " + budgetBytes + " bytes; raise the budget");
            }
            if (!evictUntil(budgetBytes - size - reservedBytes)) {
                throw new ChunkCacheException("chunk cache " + dir + " is full: no room for chunk " + hex + " ("
                    + size + " bytes) within the budget of " + budgetBytes + " bytes; " + usedBytes
                    + " bytes are cached, " + leasedBytes() + " of them being read right now, " + reservedBytes
                    + " bytes being written; raise the budget");
            }
            reservedBytes += size;
        }
        boolean stored = false;
        try {
            try {
                write(hex, bytes);
            } catch (IOException first) {
                // The filesystem is full (or failing) before the budget is: make room beyond the budget and try once
                // more.
                long freed;
                synchronized (this) {
                    long before = usedBytes;
                    evictUntil(usedBytes - size);
                    freed = before - usedBytes;
                }
                LOG.warn("chunk cache {}: writing chunk {} failed ({}); evicted {} bytes and retrying", dir, hex,
                    first.toString(), freed);
                try {
                    write(hex, bytes);
                } catch (IOException second) {
                    second.addSuppressed(first);
                    throw new ChunkCacheException("chunk cache " + dir + " cannot store chunk " + hex + " (" + size
                        + " bytes): " + second.getMessage() + "; free disk space on its filesystem or lower the"
                        + " budget below the space available", second);
                }
            }
            stored = true;
        } finally {
            synchronized (this) {
                reservedBytes -= size;
                // After close the file stays on disk and the next open finds it.
                if (stored && !closed && !index.containsKey(hex)) {
                    index.put(hex, new Entry(hex, size, true, clock.millis()));
                    usedBytes += size;
                }
            }
        }
    }

    /** Removes a chunk (a no-op when absent or leased; a leased one can be invalidated through its lease). */
    public synchronized void remove(String hex) {
        Entry e = index.get(hex);
        if (e != null && e.leases == 0) {
            drop(e);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            index.clear();
            usedBytes = 0;
        }
        try {
            lock.release();
        } catch (IOException e) {
            LOG.debug("releasing lock of chunk cache {}: {}", dir, e.toString());
        }
        closeQuietly(lockChannel);
    }

    /** A read lease on one cached chunk; see {@link #open}. Closing it is idempotent. */
    public final class Chunk implements AutoCloseable {
        private final Entry entry;
        private FileChannel channel;
        private boolean released;

        private Chunk(Entry entry) {
            this.entry = entry;
        }

        public String hex() {
            return entry.hex;
        }

        public long size() {
            return entry.size;
        }

        /**
         * Fills {@code into} (position to limit) from {@code position} in the chunk and advances it.
         *
         * @throws IOException when the file is gone, short, unreadable or (first read after a restart) corrupt
         */
        public synchronized void read(long position, ByteBuffer into) throws IOException {
            if (released) {
                throw new IllegalStateException("lease on chunk " + entry.hex + " is closed");
            }
            if (position < 0 || position + into.remaining() > entry.size) {
                throw new IllegalArgumentException("range " + position + "+" + into.remaining() + " outside chunk "
                    + entry.hex + " of " + entry.size + " bytes");
            }
            if (channel == null) {
                channel = FileChannel.open(chunks.resolve(entry.hex), StandardOpenOption.READ);
                if (channel.size() != entry.size) {
                    throw new IOException("cached chunk " + entry.hex + " is " + channel.size() + " bytes, expected "
                        + entry.size);
                }
                if (!entry.verified) {
                    verify();
                }
            }
            long pos = position;
            while (into.hasRemaining()) {
                int n = channel.read(into, pos);
                if (n < 0) {
                    throw new IOException("cached chunk " + entry.hex + " ends early at " + pos);
                }
                pos += n;
            }
        }

        private void verify() throws IOException {
            MessageDigest sha = sha256();
            ByteBuffer buf = ByteBuffer.allocate(256 * 1024);
            long pos = 0;
            while (true) {
                buf.clear();
                int n = channel.read(buf, pos);
                if (n < 0) {
                    break;
                }
                pos += n;
                buf.flip();
                sha.update(buf);
            }
            String actual = HexFormat.of().formatHex(sha.digest());
            if (!actual.equals(entry.hex)) {
                throw new IOException("cached chunk " + entry.hex + " is corrupt on disk (its sha256 is " + actual
                    + ")");
            }
            entry.verified = true;
        }

        /** Drops the chunk from the cache (its file is deleted); the lease stays open until closed. */
        public void invalidate() {
            synchronized (ChunkCache.this) {
                if (index.get(entry.hex) == entry) {
                    drop(entry);
                }
            }
        }

        @Override
        public void close() {
            synchronized (this) {
                if (released) {
                    return;
                }
                released = true;
                closeQuietly(channel);
            }
            synchronized (ChunkCache.this) {
                entry.leases--;
            }
        }
    }

    // -- internals --

    /** Evicts unleased chunks, least recently used first, until at most {@code target} bytes are used. */
    private boolean evictUntil(long target) {
        if (usedBytes <= target) {
            return true;
        }
        Iterator<Entry> it = index.values().iterator();
        while (usedBytes > target && it.hasNext()) {
            Entry e = it.next();
            if (e.leases > 0) {
                continue;
            }
            it.remove();
            usedBytes -= e.size;
            evictions++;
            deleteFile(e.hex);
        }
        return usedBytes <= target;
    }

    private long leasedBytes() {
        long n = 0;
        for (Entry e : index.values()) {
            if (e.leases > 0) {
                n += e.size;
            }
        }
        return n;
    }

    private void drop(Entry e) {
        index.remove(e.hex);
        usedBytes -= e.size;
        deleteFile(e.hex);
    }

    // Called with the lock held, so that a put of the same chunk cannot interleave with the unlink.
    private void deleteFile(String hex) {
        try {
            Files.deleteIfExists(chunks.resolve(hex));
        } catch (IOException e) {
            LOG.warn("chunk cache {}: cannot delete chunk {}: {}", dir, hex, e.toString());
        }
    }

    private void write(String hex, byte[] bytes) throws IOException {
        Path temp = Files.createTempFile(tmp, hex + ".", ".tmp");
        try {
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(bytes);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            }
            Files.setLastModifiedTime(temp, FileTime.fromMillis(clock.millis()));
            Files.move(temp, chunks.resolve(hex), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(temp);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private void touch(Entry e) {
        long now = clock.millis();
        if (now - e.touchedMillis < touchIntervalMillis) {
            return;
        }
        e.touchedMillis = now;
        try {
            Files.setLastModifiedTime(chunks.resolve(e.hex), FileTime.fromMillis(now));
        } catch (NoSuchFileException gone) {
            // Evicted or invalidated meanwhile; the read will find out.
        } catch (IOException ex) {
            LOG.debug("chunk cache {}: cannot touch chunk {}: {}", dir, e.hex, ex.toString());
        }
    }

    private void cleanTmp() throws IOException {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(tmp)) {
            for (Path f : files) {
                Files.deleteIfExists(f);
            }
        }
    }

    private record Found(String hex, long size, long mtime) {
    }

    private void scan() throws IOException {
        long t0 = System.nanoTime();
        List<Found> found = new ArrayList<>();
        int ignored = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(chunks)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                BasicFileAttributes a;
                try {
                    a = Files.readAttributes(f, BasicFileAttributes.class);
                } catch (NoSuchFileException gone) {
                    continue;
                }
                if (!HEX.matcher(name).matches() || !a.isRegularFile()) {
                    ignored++;
                    continue;
                }
                if (a.size() == 0) {
                    Files.deleteIfExists(f);
                    continue;
                }
                found.add(new Found(name, a.size(), a.lastModifiedTime().toMillis()));
            }
        }
        found.sort(Comparator.comparingLong(Found::mtime));
        synchronized (this) {
            for (Found f : found) {
                index.put(f.hex, new Entry(f.hex, f.size, false, f.mtime));
                usedBytes += f.size;
            }
            long before = usedBytes;
            evictUntil(budgetBytes);
            LOG.info("chunk cache {}: {} chunks, {} bytes of a {} byte budget{} (scanned in {} ms){}", dir, index.size(),
                usedBytes, budgetBytes, before > usedBytes ? ", evicted " + (before - usedBytes) + " bytes over it" : "",
                (System.nanoTime() - t0) / 1_000_000, ignored > 0 ? "; ignored " + ignored + " foreign files" : "");
        }
    }

    private void checkOpen() throws ChunkCacheException {
        if (closed) {
            throw new ChunkCacheException("chunk cache " + dir + " is closed");
        }
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String sha256Hex(byte[] bytes) {
        return HexFormat.of().formatHex(sha256().digest(bytes));
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception e) {
                LOG.debug("close: {}", e.toString());
            }
        }
    }
}
