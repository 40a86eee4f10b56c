package io.dsec.image.internal.fuse;

import java.nio.ByteBuffer;

/**
 * The FUSE kernel protocol (include/uapi/linux/fuse.h, 7.40) as absolute reads and writes on a native-order
 * {@link ByteBuffer}: no objects per request. Offsets are those of the C structs on a 64-bit host.
 */
final class FuseCodec {
    static final int KERNEL_VERSION = 7;
    /** 7.40 brought FUSE_HAS_RESEND and FUSE_NOTIFY_RESEND; the structs used here have not changed since. */
    static final int KERNEL_MINOR_VERSION = 40;
    static final long ROOT_ID = 1;

    // opcodes
    static final int LOOKUP = 1, FORGET = 2, GETATTR = 3, SETATTR = 4, OPEN = 14, READ = 15, STATFS = 17, RELEASE = 18,
        GETXATTR = 22, LISTXATTR = 23, FLUSH = 25, INIT = 26, OPENDIR = 27, READDIR = 28, RELEASEDIR = 29, ACCESS = 34,
        INTERRUPT = 36, DESTROY = 38, BATCH_FORGET = 42, READDIRPLUS = 44;

    // INIT flags (bits 32..63 travel in flags2)
    static final long ASYNC_READ = 1L << 0, BIG_WRITES = 1L << 5, PARALLEL_DIROPS = 1L << 18, MAX_PAGES = 1L << 22,
        INIT_EXT = 1L << 30, HAS_RESEND = 1L << 39;
    /** What this server asks for; INIT answers with the part the kernel offers. */
    static final long WANTED_FLAGS = ASYNC_READ | BIG_WRITES | PARALLEL_DIROPS | MAX_PAGES | HAS_RESEND;

    static final int FOPEN_KEEP_CACHE = 1 << 1, FOPEN_NOFLUSH = 1 << 5;
    static final long UNIQUE_RESEND = 1L << 63;

    // notify codes (sent with unique 0 and the code in the error field)
    static final int NOTIFY_INVAL_ENTRY = 3, NOTIFY_RESEND = 7;

    static final int IN_HEADER = 40, OUT_HEADER = 16;
    static final int ATTR_SIZE = 88, ENTRY_OUT = 40 + ATTR_SIZE, ATTR_OUT = 16 + ATTR_SIZE, OPEN_OUT = 16,
        STATFS_OUT = 80, INIT_OUT = 64, INIT_OUT_COMPAT_22 = 24, GETXATTR_OUT = 8, DIRENT_HEADER = 24;

    static final int S_IFDIR = 0040000, S_IFREG = 0100000;
    static final int DT_DIR = 4, DT_REG = 8;
    static final int BLOCK_SIZE = 4096;

    private FuseCodec() {
    }

    // fuse_in_header {u32 len; u32 opcode; u64 unique; u64 nodeid; u32 uid; u32 gid; u32 pid; u16 total_extlen; u16 pad}
    static int inLen(ByteBuffer in) {
        return in.getInt(0);
    }

    static int opcode(ByteBuffer in) {
        return in.getInt(4);
    }

    static long unique(ByteBuffer in) {
        return in.getLong(8);
    }

    static long nodeid(ByteBuffer in) {
        return in.getLong(16);
    }

    /** The requesting thread's id in the mounter's pid namespace; 0 when the kernel does not know one. */
    static int pid(ByteBuffer in) {
        return in.getInt(32);
    }

    /** The NUL-terminated name that follows the header of LOOKUP (ASCII; served names are [a-z0-9._-]+). */
    static String name(ByteBuffer in, int offset, int end) {
        int stop = offset;
        while (stop < end && in.get(stop) != 0) {
            stop++;
        }
        char[] chars = new char[stop - offset];
        for (int i = 0; i < chars.length; i++) {
            chars[i] = (char) (in.get(offset + i) & 0xff);
        }
        return new String(chars);
    }

    /** fuse_out_header {u32 len; s32 error; u64 unique}; {@code errno} is positive, written negated. */
    static void putOutHeader(ByteBuffer out, int len, int errno, long unique) {
        out.putInt(0, len);
        out.putInt(4, -errno);
        out.putLong(8, unique);
    }

    /**
     * fuse_attr: ino, size, blocks, atime, mtime, ctime, atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev,
     * blksize, flags. Owner root:root.
     */
    static void putAttr(ByteBuffer out, int at, long ino, long size, int mode, int nlink, long timeSeconds) {
        out.putLong(at, ino);
        out.putLong(at + 8, size);
        out.putLong(at + 16, (size + 511) / 512);
        out.putLong(at + 24, timeSeconds);
        out.putLong(at + 32, timeSeconds);
        out.putLong(at + 40, timeSeconds);
        out.putInt(at + 48, 0);
        out.putInt(at + 52, 0);
        out.putInt(at + 56, 0);
        out.putInt(at + 60, mode);
        out.putInt(at + 64, nlink);
        out.putInt(at + 68, 0);
        out.putInt(at + 72, 0);
        out.putInt(at + 76, 0);
        out.putInt(at + 80, BLOCK_SIZE);
        out.putInt(at + 84, 0);
    }

    /** fuse_entry_out {u64 nodeid; u64 generation; u64 entry_valid; u64 attr_valid; u32 nsecs x2; fuse_attr}. */
    static int putEntryOut(ByteBuffer out, int at, long ino, long size, int mode, int nlink, long time, long validSeconds) {
        out.putLong(at, ino);
        out.putLong(at + 8, 1);
        out.putLong(at + 16, validSeconds);
        out.putLong(at + 24, validSeconds);
        out.putInt(at + 32, 0);
        out.putInt(at + 36, 0);
        putAttr(out, at + 40, ino, size, mode, nlink, time);
        return ENTRY_OUT;
    }

    /** fuse_attr_out {u64 attr_valid; u32 attr_valid_nsec; u32 dummy; fuse_attr}. */
    static int putAttrOut(ByteBuffer out, int at, long ino, long size, int mode, int nlink, long time, long validSeconds) {
        out.putLong(at, validSeconds);
        out.putInt(at + 8, 0);
        out.putInt(at + 12, 0);
        putAttr(out, at + 16, ino, size, mode, nlink, time);
        return ATTR_OUT;
    }

    /** fuse_open_out {u64 fh; u32 open_flags; s32 backing_id}. */
    static int putOpenOut(ByteBuffer out, int at, long fh, int openFlags) {
        out.putLong(at, fh);
        out.putInt(at + 8, openFlags);
        out.putInt(at + 12, 0);
        return OPEN_OUT;
    }

    /** fuse_kstatfs {u64 blocks, bfree, bavail, files, ffree; u32 bsize, namelen, frsize, padding, spare[6]}. */
    static int putStatfs(ByteBuffer out, int at, long blocks, long files) {
        for (int i = 0; i < STATFS_OUT; i += 8) {
            out.putLong(at + i, 0);
        }
        out.putLong(at, blocks);
        out.putLong(at + 24, files);
        out.putInt(at + 40, BLOCK_SIZE);
        out.putInt(at + 44, 255);
        out.putInt(at + 48, BLOCK_SIZE);
        return STATFS_OUT;
    }

    /** fuse_getxattr_out {u32 size; u32 padding}. */
    static int putXattrSize(ByteBuffer out, int at, int size) {
        out.putInt(at, size);
        out.putInt(at + 4, 0);
        return GETXATTR_OUT;
    }

    static int direntSize(int nameLength) {
        return (DIRENT_HEADER + nameLength + 7) & ~7;
    }

    /**
     * fuse_dirent {u64 ino; u64 off; u32 namelen; u32 type; char name[]} padded to 8 bytes.
     *
     * @return the offset after the entry, or -1 when it does not fit before {@code limit}
     */
    static int putDirent(ByteBuffer out, int at, int limit, long ino, long nextOffset, int type, String name) {
        int size = direntSize(name.length());
        if (at + size > limit) {
            return -1;
        }
        out.putLong(at, ino);
        out.putLong(at + 8, nextOffset);
        out.putInt(at + 16, name.length());
        out.putInt(at + 20, type);
        for (int i = 0; i < name.length(); i++) {
            out.put(at + DIRENT_HEADER + i, (byte) name.charAt(i));
        }
        for (int i = DIRENT_HEADER + name.length(); i < size; i++) {
            out.put(at + i, (byte) 0);
        }
        return at + size;
    }

    /** What INIT agreed on; persisted so that a reattached server knows it without a second INIT. */
    record Init(int major, int minor, long flags, int maxReadahead, int maxPages) {
        boolean has(long flag) {
            return (flags & flag) != 0;
        }
    }

    /**
     * Negotiates INIT: the kernel offers {@code kernelFlags} (flags2 already shifted into the upper half when the
     * kernel set FUSE_INIT_EXT); the server takes {@link #WANTED_FLAGS} that are offered.
     */
    static Init negotiate(int kernelMajor, int kernelMinor, int kernelMaxReadahead, long kernelFlags, int maxReadahead, int maxPages) {
        if (kernelMajor != KERNEL_VERSION) {
            return new Init(KERNEL_VERSION, KERNEL_MINOR_VERSION, 0, 0, 0);
        }
        long flags = WANTED_FLAGS & kernelFlags;
        if ((kernelFlags & INIT_EXT) == 0) {
            flags &= 0xffffffffL;
        }
        return new Init(KERNEL_VERSION, Math.min(kernelMinor, KERNEL_MINOR_VERSION), flags,
            Math.min(kernelMaxReadahead, maxReadahead), (flags & MAX_PAGES) != 0 ? maxPages : 0);
    }

    /** The flags the kernel offered in fuse_init_in (major, minor, max_readahead, flags, flags2 after the header). */
    static long kernelInitFlags(ByteBuffer in) {
        long flags = Integer.toUnsignedLong(in.getInt(IN_HEADER + 12));
        if ((flags & INIT_EXT) != 0 && inLen(in) >= IN_HEADER + 20) {
            flags |= Integer.toUnsignedLong(in.getInt(IN_HEADER + 16)) << 32;
        }
        return flags;
    }

    /**
     * fuse_init_out {u32 major, minor, max_readahead, flags; u16 max_background, congestion_threshold; u32 max_write,
     * time_gran; u16 max_pages, map_alignment; u32 flags2, max_stack_depth; u16 request_timeout; u16 unused[11]}.
     *
     * @return the length of the struct written (the 7.22 size for kernels older than 7.23)
     */
    static int putInitOut(ByteBuffer out, int at, Init init, int kernelMinor, int maxWrite, int maxBackground) {
        for (int i = 0; i < INIT_OUT; i += 4) {
            out.putInt(at + i, 0);
        }
        out.putInt(at, init.major());
        out.putInt(at + 4, init.minor());
        out.putInt(at + 8, init.maxReadahead());
        int low = (int) init.flags();
        int high = (int) (init.flags() >>> 32);
        out.putInt(at + 12, high != 0 ? low | (int) INIT_EXT : low);
        out.putShort(at + 16, (short) maxBackground);
        out.putShort(at + 18, (short) (maxBackground * 3 / 4));
        out.putInt(at + 20, maxWrite);
        out.putInt(at + 24, 1);
        out.putShort(at + 28, (short) init.maxPages());
        out.putInt(at + 32, high);
        return kernelMinor < 23 ? INIT_OUT_COMPAT_22 : INIT_OUT;
    }

    /** A notification with no payload (FUSE_NOTIFY_RESEND): just the header. */
    static int putNotify(ByteBuffer out, int code) {
        out.putInt(0, OUT_HEADER);
        out.putInt(4, code);
        out.putLong(8, 0);
        return OUT_HEADER;
    }

    /** FUSE_NOTIFY_INVAL_ENTRY: fuse_notify_inval_entry_out {u64 parent; u32 namelen; u32 flags} + name + NUL. */
    static int putInvalEntry(ByteBuffer out, long parent, String name) {
        int len = OUT_HEADER + 16 + name.length() + 1;
        out.putInt(0, len);
        out.putInt(4, NOTIFY_INVAL_ENTRY);
        out.putLong(8, 0);
        out.putLong(16, parent);
        out.putInt(24, name.length());
        out.putInt(28, 0);
        for (int i = 0; i < name.length(); i++) {
            out.put(32 + i, (byte) name.charAt(i));
        }
        out.put(32 + name.length(), (byte) 0);
        return len;
    }
}
