package io.dsec.image.internal.fuse;

import static io.dsec.image.internal.fuse.FuseCodec.*;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The served tree, a flat read-only directory of {@link FuseFile}s, and the answer to each request. Stateless towards
 * the kernel where it can be: file handles are inode numbers, so a reattached server answers READs of files the dead
 * JVM opened.
 */
final class FuseFilesystem {
    private static final Logger LOG = LoggerFactory.getLogger(FuseFilesystem.class);
    static final Pattern NAME = Pattern.compile("[a-z0-9._-]+");
    /** Files never change under a name (a new file gets a new inode), so the kernel may cache for a day. */
    static final long VALID_SECONDS = 86_400;
    static final int MAX_WRITE = 128 << 10;
    static final int MAX_BACKGROUND = 64;
    private static final int W_OK = 2;
    private static final int ESTALE = 116;

    record Node(long ino, String name, FuseFile file) {
    }

    private final FuseState state;
    private final FuseState.Inodes inodes;
    private final ConcurrentSkipListMap<String, Node> byName = new ConcurrentSkipListMap<>();
    private final ConcurrentHashMap<Long, Node> byIno = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Node[]> dirHandles = new ConcurrentHashMap<>();
    private final AtomicLong nextDirHandle = new AtomicLong(1);
    private final int maxReadahead;
    private final int maxPages;
    private volatile FuseCodec.Init init;

    final LongAdder requests = new LongAdder();
    final LongAdder bytesRead = new LongAdder();
    final LongAdder errors = new LongAdder();

    FuseFilesystem(FuseState state, int maxReadahead, int maxPages) {
        this.state = state;
        this.inodes = state.loadInodes();
        this.maxReadahead = maxReadahead;
        this.maxPages = maxPages;
        this.init = state.loadInit();
    }

    FuseCodec.Init init() {
        return init;
    }

    /** Serves {@code file} as {@code name}; a name served before (in this JVM or the previous one) keeps its inode. */
    void add(String name, FuseFile file) {
        if (name == null || !NAME.matcher(name).matches() || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("bad FUSE file name '" + name + "': use [a-z0-9._-]+");
        }
        if (file == null) {
            throw new IllegalArgumentException("file is null");
        }
        synchronized (inodes) {
            if (byName.containsKey(name)) {
                throw new IllegalStateException("'" + name + "' is already served; remove it first");
            }
            Long ino = inodes.byName.get(name);
            if (ino == null) {
                ino = inodes.next++;
                inodes.byName.put(name, ino);
                state.saveInodes(inodes);
            }
            Node node = new Node(ino, name, file);
            byIno.put(ino, node);
            byName.put(name, node);
        }
    }

    /**
     * Stops serving {@code name}. Files already open keep reading (like an unlinked file); the name forgets its inode, so
     * a file added again under it is a new inode with no stale page cache.
     *
     * @return the node that was removed, or null
     */
    Node remove(String name) {
        synchronized (inodes) {
            Node node = byName.remove(name);
            if (node != null) {
                inodes.byName.remove(name);
                state.saveInodes(inodes);
            }
            return node;
        }
    }

    boolean contains(String name) {
        return byName.containsKey(name);
    }

    /**
     * Answers the request in {@code in} (its first {@code n} bytes). The reply goes to {@code out} from offset 0, READ data
     * through {@code data}, a view of {@code out} from {@link FuseCodec#OUT_HEADER}.
     *
     * @return the length of the reply, or 0 when the request takes none (FORGET, INTERRUPT)
     */
    int handle(ByteBuffer in, int n, ByteBuffer out, ByteBuffer data) {
        requests.increment();
        int opcode = opcode(in);
        long unique = unique(in);
        if ((unique & UNIQUE_RESEND) != 0) {
            LOG.debug("FUSE request {} opcode {} was resent", Long.toHexString(unique), opcode);
        }
        try {
            return switch (opcode) {
                case INIT -> init(in, out, unique);
                case LOOKUP -> lookup(in, n, out, unique);
                case FORGET, BATCH_FORGET, INTERRUPT -> 0;
                case GETATTR -> getattr(in, out, unique);
                case OPEN -> open(in, out, unique);
                case READ -> read(in, out, data, unique);
                case RELEASE, FLUSH, RELEASEDIR -> {
                    if (opcode == RELEASEDIR) {
                        dirHandles.remove(in.getLong(IN_HEADER));
                    }
                    yield reply(out, 0, unique);
                }
                case OPENDIR -> opendir(in, out, unique);
                case READDIR -> readdir(in, out, unique);
                case STATFS -> statfs(out, unique);
                case ACCESS -> (in.getInt(IN_HEADER) & W_OK) != 0 ? error(out, FuseNative.EROFS, unique) : reply(out, 0, unique);
                case GETXATTR -> error(out, FuseNative.ENODATA, unique);
                case LISTXATTR -> in.getInt(IN_HEADER) == 0 ? reply(out, putXattrSize(out, OUT_HEADER, 0), unique) : reply(out, 0, unique);
                case DESTROY -> reply(out, 0, unique);
                default -> error(out, FuseNative.ENOSYS, unique);
            };
        } catch (VirtualMachineError e) {
            throw e;
        } catch (RuntimeException | Error e) {
            errors.increment();
            LOG.error("FUSE request opcode {} node {} failed", opcode, nodeid(in), e);
            return error(out, FuseNative.EIO, unique);
        }
    }

    private static int reply(ByteBuffer out, int payload, long unique) {
        putOutHeader(out, OUT_HEADER + payload, 0, unique);
        return OUT_HEADER + payload;
    }

    private static int error(ByteBuffer out, int errno, long unique) {
        putOutHeader(out, OUT_HEADER, errno, unique);
        return OUT_HEADER;
    }

    private int init(ByteBuffer in, ByteBuffer out, long unique) {
        int major = in.getInt(IN_HEADER);
        int minor = in.getInt(IN_HEADER + 4);
        int kernelReadahead = in.getInt(IN_HEADER + 8);
        FuseCodec.Init agreed = negotiate(major, minor, kernelReadahead, kernelInitFlags(in), maxReadahead, maxPages);
        int len = putInitOut(out, OUT_HEADER, agreed, minor, MAX_WRITE, MAX_BACKGROUND);
        if (major == KERNEL_VERSION) {
            init = agreed;
            state.saveInit(agreed);
            LOG.debug("FUSE INIT: kernel {}.{} flags {}, agreed minor {} flags {} max_pages {}", major, minor,
                Long.toHexString(kernelInitFlags(in)), agreed.minor(), Long.toHexString(agreed.flags()), agreed.maxPages());
        }
        return reply(out, len, unique);
    }

    private Node file(long ino) {
        return ino == ROOT_ID ? null : byIno.get(ino);
    }

    private int lookup(ByteBuffer in, int n, ByteBuffer out, long unique) {
        if (nodeid(in) != ROOT_ID) {
            return error(out, FuseNative.ENOTDIR, unique);
        }
        Node node = byName.get(name(in, IN_HEADER, n));
        if (node == null) {
            return error(out, FuseNative.ENOENT, unique); // no negative entry: a name added later shows up at once
        }
        return reply(out, putEntryOut(out, OUT_HEADER, node.ino, node.file.size(), S_IFREG | 0444, 1, inodes.time,
            VALID_SECONDS), unique);
    }

    private int getattr(ByteBuffer in, ByteBuffer out, long unique) {
        long ino = nodeid(in);
        if (ino == ROOT_ID) {
            return reply(out, putAttrOut(out, OUT_HEADER, ROOT_ID, 0, S_IFDIR | 0555, 2, inodes.time, VALID_SECONDS), unique);
        }
        Node node = file(ino);
        if (node == null) {
            return error(out, FuseNative.ENOENT, unique);
        }
        return reply(out, putAttrOut(out, OUT_HEADER, ino, node.file.size(), S_IFREG | 0444, 1, inodes.time, VALID_SECONDS), unique);
    }

    private int open(ByteBuffer in, ByteBuffer out, long unique) {
        long ino = nodeid(in);
        if (ino == ROOT_ID) {
            return error(out, FuseNative.EISDIR, unique);
        }
        int flags = in.getInt(IN_HEADER);
        if ((flags & FuseNative.O_ACCMODE) != FuseNative.O_RDONLY || (flags & FuseNative.O_TRUNC) != 0) {
            return error(out, FuseNative.EROFS, unique);
        }
        if (file(ino) == null) {
            return error(out, FuseNative.ENOENT, unique);
        }
        // The handle is the inode number: a server that takes over after a JVM died still knows it.
        return reply(out, putOpenOut(out, OUT_HEADER, ino, FOPEN_KEEP_CACHE | FOPEN_NOFLUSH), unique);
    }

    private int read(ByteBuffer in, ByteBuffer out, ByteBuffer data, long unique) {
        long fh = in.getLong(IN_HEADER);
        long offset = in.getLong(IN_HEADER + 8);
        int size = in.getInt(IN_HEADER + 16);
        Node node = file(fh);
        if (node == null) {
            node = file(nodeid(in));
        }
        if (node == null) {
            errors.increment();
            return error(out, ESTALE, unique);
        }
        long fileSize = node.file.size();
        int length = offset >= fileSize ? 0 : (int) Math.min(Math.min(size, data.capacity()), fileSize - offset);
        data.clear().limit(length);
        if (length > 0) {
            try {
                node.file.read(offset, data, pid(in));
            } catch (FuseErrnoException e) {
                errors.increment();
                LOG.debug("read of {} at {} ({} bytes) failed with errno {}", node.name, offset, length, e.errno(), e);
                return error(out, e.errno() > 0 && e.errno() < 512 ? e.errno() : FuseNative.EIO, unique);
            }
        }
        int got = data.position();
        bytesRead.add(got);
        return reply(out, got, unique);
    }

    private int opendir(ByteBuffer in, ByteBuffer out, long unique) {
        if (nodeid(in) != ROOT_ID) {
            return error(out, FuseNative.ENOTDIR, unique);
        }
        long fh = nextDirHandle.getAndIncrement();
        dirHandles.put(fh, byName.values().toArray(new Node[0]));
        return reply(out, putOpenOut(out, OUT_HEADER, fh, 0), unique);
    }

    /** Entries are ".", ".." and the names in order; the offset of an entry is its index + 1. */
    private int readdir(ByteBuffer in, ByteBuffer out, long unique) {
        if (nodeid(in) != ROOT_ID) {
            return error(out, FuseNative.ENOTDIR, unique);
        }
        long fh = in.getLong(IN_HEADER);
        long offset = in.getLong(IN_HEADER + 8);
        int size = in.getInt(IN_HEADER + 16);
        Node[] entries = dirHandles.get(fh);
        if (entries == null) { // a handle of a JVM that died
            entries = byName.values().toArray(new Node[0]);
        }
        int limit = OUT_HEADER + Math.min(size, out.capacity() - OUT_HEADER);
        int at = OUT_HEADER;
        for (long i = Math.max(0, offset); i < entries.length + 2L; i++) {
            int next;
            if (i < 2) {
                next = putDirent(out, at, limit, ROOT_ID, i + 1, DT_DIR, i == 0 ? "." : "..");
            } else {
                Node node = entries[(int) (i - 2)];
                next = putDirent(out, at, limit, node.ino, i + 1, DT_REG, node.name);
            }
            if (next < 0) {
                break;
            }
            at = next;
        }
        return reply(out, at - OUT_HEADER, unique);
    }

    private int statfs(ByteBuffer out, long unique) {
        long blocks = 0;
        List<Node> nodes = new ArrayList<>(byName.values());
        for (Node node : nodes) {
            blocks += (node.file.size() + BLOCK_SIZE - 1) / BLOCK_SIZE;
        }
        return reply(out, putStatfs(out, OUT_HEADER, blocks, nodes.size() + 1), unique);
    }
}
