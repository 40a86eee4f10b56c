package io.dsec.snapshot.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.LinkOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Squashes a chain of diff layers into one tree, applying each layer, oldest first, onto a staging directory with
 * overlay's semantics, so that the result over the layers below the chain shows what the whole chain showed:
 *
 * <ul>
 *   <li>a whiteout removes what the staging tree has at its path and stays a whiteout (it must still hide the workspace
 *       and base below);</li>
 *   <li>an opaque directory replaces what the staging tree has there and keeps its opaque marker;</li>
 *   <li>a plain directory merges into a staging directory (its owner, mode, xattrs and times win); over a whiteout or an
 *       opaque directory it becomes opaque, since in the chain the lookup stopped there;</li>
 *   <li>anything else replaces what is there.</li>
 * </ul>
 */
final class LayerMerge {
    private LayerMerge() {
    }

    /** Applies the layer tree at {@code layer} onto {@code staging}; returns the bytes of file data copied. */
    static long apply(Path layer, Path staging) throws IOException {
        Files.createDirectories(staging);
        return visit("", layer, staging, new HashMap<>());
    }

    /**
     * Removes the whiteouts a squashed tree does not need, and must not keep: those under an opaque directory, and those
     * whose path no layer below the chain ({@code lowers}: workspace, base) has. In the chain each whiteout sat in a
     * directory that overlay merged with the diffs below it; squashed, a directory that only the chain had is no longer
     * merged, and overlay would list the whiteout in it as an entry that cannot be opened.
     */
    static void pruneWhiteouts(Path staging, List<Path> lowers) throws IOException {
        prune("", staging, lowers, false);
    }

    private static void prune(String rel, Path d, List<Path> lowers, boolean underOpaque) throws IOException {
        Trees.Stat st = Trees.lstat(d);
        boolean changed = false;
        for (String name : Trees.list(d)) {
            String childRel = rel.isEmpty() ? name : rel + "/" + name;
            Path child = d.resolve(name);
            Trees.Stat cs = Trees.lstat(child);
            if (cs.isWhiteout()) {
                boolean needed = !underOpaque && lowers.stream().anyMatch(l -> Files.exists(l.resolve(childRel), LinkOption.NOFOLLOW_LINKS));
                if (!needed) {
                    Files.delete(child);
                    changed = true;
                }
            } else if (cs.isDir()) {
                prune(childRel, child, lowers, underOpaque || Trees.isOpaque(child));
            }
        }
        if (changed) {
            Trees.setTimes(d, st);
        }
    }

    private static long visit(String rel, Path s, Path d, Map<Long, Path> links) throws IOException {
        Trees.Stat st = Trees.lstat(s);
        long bytes = 0;
        if (st.isDir()) {
            Trees.Stat existing = Trees.lstat(d);
            boolean opaque = !rel.isEmpty() && Trees.isOpaque(s);
            boolean hidesBelow = existing != null && (existing.isWhiteout() || (existing.isDir() && Trees.isOpaque(d)));
            if (existing != null && (opaque || !existing.isDir())) {
                Trees.deleteTree(d);
                existing = null;
            }
            if (existing == null) {
                Files.createDirectory(d);
            }
            Trees.applyMeta(s, d, st, true);
            if (!opaque && hidesBelow && !rel.isEmpty()) {
                NativeFs.setXattr(d.toString(), Trees.OPAQUE, new byte[] {'y'});
            }
            for (String name : Trees.list(s)) {
                bytes += visit(rel.isEmpty() ? name : rel + "/" + name, s.resolve(name), d.resolve(name), links);
            }
            Trees.setTimes(d, st);
            return bytes;
        }
        Trees.deleteTree(d);
        return Trees.copyEntry(s, d, st, links);
    }
}
