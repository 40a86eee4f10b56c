package io.dsec.snapshot.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A copy of a live overlay upper directory, made in passes so that the sandbox is frozen only for the last one.
 *
 * <p>The first pass copies everything while the sandbox runs, and remembers for each path the inode and ctime it saw
 * before copying it. Later passes walk the upper again and copy only what changed: a path that is new, or whose inode,
 * type or ctime differs (every change of content, metadata, xattrs or links moves the ctime), and delete what is gone.
 * The last pass runs with the sandbox frozen, so the copy is then exactly the upper at one instant; it costs a walk of
 * the tree plus whatever changed since the pass before.
 *
 * <p>Two cases are copied again whatever the ctime says: regular files with several links (so that links among them are
 * rebuilt), and entries whose ctime was within {@link #COARSE_CLOCK_NANOS} of the moment they were looked at, because a
 * filesystem whose timestamps are coarse (a clock tick; kernels without multigrain timestamps) can give a change right
 * after that look the same ctime.
 */
final class UpperCopy {
    static final long COARSE_CLOCK_NANOS = TimeUnit.MILLISECONDS.toNanos(30);

    private final Path src;
    private final Path dst;
    private final Set<String> excludedTopLevel;
    private final Map<String, Entry> copied = new HashMap<>();

    /** What was copied at a path: the upper's entry as it was before the copy. */
    private record Entry(long ino, long ctimeNs, int type, long size, boolean trusted, boolean sparse) {
    }

    /** What one pass did. */
    record Pass(long entriesCopied, long bytesCopied, long entriesDeleted) {
    }

    UpperCopy(Path src, Path dst, Set<String> excludedTopLevel) {
        this.src = src;
        this.dst = dst;
        this.excludedTopLevel = Set.copyOf(excludedTopLevel);
    }

    /**
     * Brings the copy up to date. With {@code strict} (the sandbox frozen) every failure is fatal; without, an entry
     * that vanishes or changes under the copy is left for the next pass.
     */
    Pass pass(boolean strict) throws IOException {
        Files.createDirectories(dst);
        long[] counts = new long[2];
        Set<String> seen = new HashSet<>();
        visit("", src, dst, strict, seen, new HashMap<>(), counts);
        List<String> gone = new ArrayList<>();
        for (String rel : copied.keySet()) {
            if (!seen.contains(rel)) {
                gone.add(rel);
            }
        }
        gone.sort(Comparator.comparingInt(String::length).reversed());
        for (String rel : gone) {
            copied.remove(rel);
            Trees.deleteTree(dst.resolve(rel));
        }
        return new Pass(counts[0], counts[1], gone.size());
    }

    /** Entries in the copy. */
    long entries() {
        return copied.size();
    }

    /** True when a file of the copy has holes. */
    boolean hasSparseFiles() {
        return copied.values().stream().anyMatch(Entry::sparse);
    }

    /** Bytes of regular files in the copy. */
    long bytes() {
        long sum = 0;
        for (Entry e : copied.values()) {
            if (e.type == NativeFs.S_IFREG) {
                sum += e.size;
            }
        }
        return sum;
    }

    private void visit(String rel, Path s, Path d, boolean strict, Set<String> seen, Map<Long, Path> links, long[] counts)
        throws IOException {
        long lookedAt = System.currentTimeMillis() * 1_000_000L;
        Trees.Stat st = Trees.lstat(s);
        if (st == null) {
            if (strict && rel.isEmpty()) {
                throw new IOException("the upper directory " + s + " is gone");
            }
            return; // vanished since its directory was listed: not seen, so deleted from the copy
        }
        seen.add(rel);
        Entry prev = copied.get(rel);
        boolean clean = prev != null && prev.trusted && prev.ino == st.ino() && prev.ctimeNs == st.ctimeNs()
            && prev.type == st.type() && !(st.type() == NativeFs.S_IFREG && st.nlink() > 1);
        if (!clean) {
            boolean sparse;
            try {
                if (st.isDir()) {
                    Trees.Stat existing = Trees.lstat(d);
                    if (existing != null && !existing.isDir()) {
                        Trees.deleteTree(d);
                        existing = null;
                    }
                    if (existing == null) {
                        Files.createDirectory(d);
                    }
                    Trees.applyMeta(s, d, st, true);
                    sparse = false;
                } else {
                    Trees.deleteTree(d);
                    long bytes = Trees.copyEntry(s, d, st, links);
                    counts[1] += bytes;
                    // Fewer bytes than its size: it has holes (a linked copy reports 0; its first copy says).
                    sparse = st.type() == NativeFs.S_IFREG && bytes < st.size() && !(st.nlink() > 1 && bytes == 0);
                }
                counts[0]++;
                copied.put(rel, new Entry(st.ino(), st.ctimeNs(), st.type(), st.size(), lookedAt - st.ctimeNs() >= COARSE_CLOCK_NANOS,
                    sparse));
            } catch (IOException e) {
                if (strict) {
                    throw e;
                }
                // Changed under the copy (the sandbox runs): copy it again in the next pass.
                copied.remove(rel);
                if (!st.isDir()) {
                    Trees.deleteTree(d);
                    return;
                }
                if (Trees.lstat(d) == null) {
                    return;
                }
            }
        }
        if (st.isDir()) {
            List<String> names;
            try {
                names = Trees.list(s);
            } catch (IOException e) {
                if (strict) {
                    throw e;
                }
                copied.remove(rel);
                return;
            }
            for (String name : names) {
                if (rel.isEmpty() && excludedTopLevel.contains(name)) {
                    continue;
                }
                String childRel = rel.isEmpty() ? name : rel + "/" + name;
                visit(childRel, s.resolve(name), d.resolve(name), strict, seen, links, counts);
            }
            Trees.setTimes(d, st); // after the children, whose copies moved the directory's mtime
        }
    }
}
