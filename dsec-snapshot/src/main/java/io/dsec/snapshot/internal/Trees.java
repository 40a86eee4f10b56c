package io.dsec.snapshot.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Faithful copies of single entries of an overlay layer tree (an upper directory, or a mounted diff layer): type, bytes
 * (holes kept), owner, mode, xattrs, mtime and atime, whiteouts (character devices 0/0), fifos, sockets and devices, and
 * hardlinks among the entries one copy makes.
 */
final class Trees {
    static final String OPAQUE = "trusted.overlay.opaque";
    private static final String OVERLAY_PREFIX = "trusted.overlay.";

    private Trees() {
    }

    /** What lstat(2) says of an entry. */
    record Stat(int mode, long ino, long rdev, int nlink, int uid, int gid, long size, long atimeNs, long mtimeNs, long ctimeNs) {
        int type() {
            return mode & NativeFs.S_IFMT;
        }

        boolean isDir() {
            return type() == NativeFs.S_IFDIR;
        }

        boolean isWhiteout() {
            return type() == NativeFs.S_IFCHR && rdev == 0;
        }
    }

    /** lstat of {@code p}, or null when it does not exist. */
    static Stat lstat(Path p) throws IOException {
        Map<String, Object> a;
        try {
            a = Files.readAttributes(p, "unix:mode,ino,rdev,nlink,uid,gid,size,lastAccessTime,lastModifiedTime,ctime", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException | NotDirectoryException e) {
            return null;
        }
        return new Stat((Integer) a.get("mode"), (Long) a.get("ino"), (Long) a.get("rdev"), (Integer) a.get("nlink"),
            (Integer) a.get("uid"), (Integer) a.get("gid"), (Long) a.get("size"), nanos(a.get("lastAccessTime")),
            nanos(a.get("lastModifiedTime")), nanos(a.get("ctime")));
    }

    private static long nanos(Object time) {
        return ((FileTime) time).to(TimeUnit.NANOSECONDS);
    }

    /** The names in a directory. */
    static List<String> list(Path dir) throws IOException {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path e : entries) {
                names.add(e.getFileName().toString());
            }
        }
        return names;
    }

    /**
     * Which xattrs a diff keeps: all but overlay's bookkeeping of the upper it came from (origin, impure, nlink, uuid,
     * upper, protattr), which means nothing in a lower layer; opaque and redirect markers are kept.
     */
    static boolean keepXattr(String name) throws IOException {
        if (!name.startsWith(OVERLAY_PREFIX)) {
            return true;
        }
        if (name.equals("trusted.overlay.metacopy")) {
            throw new IOException("a metacopy-only file (overlay metacopy=on) has no data of its own to snapshot; "
                + "dsec mounts overlays with metacopy off");
        }
        return name.equals(OPAQUE) || name.equals("trusted.overlay.redirect");
    }

    /** Copies a non-directory entry to the new path {@code d}; regular files with several links are linked to the first copy. */
    static long copyEntry(Path s, Path d, Stat st, Map<Long, Path> links) throws IOException {
        int type = st.type();
        long bytes = 0;
        switch (type) {
            case NativeFs.S_IFREG -> {
                if (st.nlink() > 1) {
                    Path first = links.get(st.ino());
                    if (first != null) {
                        Files.createLink(d, first);
                        return 0;
                    }
                }
                bytes = NativeFs.copySparse(s.toString(), d.toString(), st.size());
                if (st.nlink() > 1) {
                    links.put(st.ino(), d);
                }
            }
            case NativeFs.S_IFLNK -> Files.createSymbolicLink(d, Files.readSymbolicLink(s));
            case NativeFs.S_IFCHR, NativeFs.S_IFBLK, NativeFs.S_IFIFO, NativeFs.S_IFSOCK -> NativeFs.makeNode(d.toString(), st.mode(), st.rdev());
            default -> throw new IOException("cannot copy " + s + ": unknown file type " + Integer.toOctalString(type));
        }
        applyMeta(s, d, st, false);
        return bytes;
    }

    /** Owner, mode, xattrs and (for non-directories) times of {@code s} onto {@code d}. */
    static void applyMeta(Path s, Path d, Stat st, boolean removeStaleXattrs) throws IOException {
        String dst = d.toString();
        NativeFs.changeOwner(dst, st.uid(), st.gid());
        if (st.type() != NativeFs.S_IFLNK) {
            NativeFs.changeMode(dst, st.mode() & 07777); // after chown, which clears set-id bits
        }
        copyXattrs(s.toString(), dst, removeStaleXattrs);
        if (!st.isDir()) {
            setTimes(d, st);
        }
    }

    static void setTimes(Path d, Stat st) throws IOException {
        NativeFs.setTimes(d.toString(), st.atimeNs(), st.mtimeNs());
    }

    private static void copyXattrs(String src, String dst, boolean removeStale) throws IOException {
        List<String> names = NativeFs.listXattrs(src);
        List<String> kept = new ArrayList<>();
        for (String name : names) {
            if (!keepXattr(name)) {
                continue;
            }
            byte[] value = NativeFs.getXattr(src, name);
            if (value != null) {
                NativeFs.setXattr(dst, name, value);
                kept.add(name);
            }
        }
        if (removeStale) {
            for (String name : NativeFs.listXattrs(dst)) {
                if (!kept.contains(name)) {
                    NativeFs.removeXattr(dst, name);
                }
            }
        }
    }

    static boolean isOpaque(Path dir) throws IOException {
        byte[] v = NativeFs.getXattr(dir.toString(), OPAQUE);
        return v != null && v.length == 1 && v[0] == 'y';
    }

    /** Deletes a tree (or a single entry) without following symlinks; nothing when it is absent. */
    static void deleteTree(Path root) throws IOException {
        io.dsec.internal.fs.FileTrees.deleteTree(root);
    }
}
