package io.dsec.internal.oci;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * How cgroups are mounted on this host: v2 only (most real hosts), v1 only, or hybrid (v1 controllers with a
 * v2 tree beside them, as here). Read from a mountinfo file so tests can feed their own.
 *
 * @param v1Hierarchies mount points of v1 hierarchies (one per controller set)
 * @param v2Mount       mount point of the v2 tree, or null
 * @param v2Controllers controllers enabled on the v2 tree (its cgroup.controllers)
 */
public record CgroupLayout(List<Path> v1Hierarchies, Path v2Mount, List<String> v2Controllers) {
    public CgroupLayout {
        v1Hierarchies = List.copyOf(v1Hierarchies);
        v2Controllers = List.copyOf(v2Controllers);
    }

    public enum Mode { V1, V2, HYBRID }

    public static CgroupLayout ofHost() {
        return parse(Path.of("/proc/self/mountinfo"));
    }

    static CgroupLayout parse(Path mountinfo) {
        List<Path> v1 = new ArrayList<>();
        Path v2 = null;
        try {
            for (String line : Files.readAllLines(mountinfo)) {
                int dash = line.indexOf(" - ");
                if (dash < 0) {
                    continue;
                }
                String[] pre = line.substring(0, dash).split(" ");
                String[] post = line.substring(dash + 3).split(" ");
                Path mountPoint = Path.of(pre[4]);
                if (post[0].equals("cgroup")) {
                    v1.add(mountPoint);
                } else if (post[0].equals("cgroup2") && v2 == null) {
                    v2 = mountPoint;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + mountinfo, e);
        }
        List<String> controllers = Collections.emptyList();
        if (v2 != null) {
            Path file = v2.resolve("cgroup.controllers");
            try {
                String text = Files.exists(file) ? Files.readString(file).trim() : "";
                controllers = text.isEmpty() ? List.of() : List.of(text.split("\\s+"));
            } catch (IOException e) {
                throw new UncheckedIOException("reading " + file, e);
            }
        }
        return new CgroupLayout(v1, v2, controllers);
    }

    public Mode mode() {
        if (v1Hierarchies.isEmpty()) {
            return Mode.V2;
        }
        return v2Mount == null ? Mode.V1 : Mode.HYBRID;
    }

    /** crun refuses hybrid hosts whose v2 tree still carries controllers ("drop all controllers from cgroupv2"). */
    public boolean crunRefuses() {
        return mode() == Mode.HYBRID && !v2Controllers.isEmpty();
    }

    /** Every directory in which a cgroup at {@code relative} would exist, one per hierarchy. */
    public List<Path> cgroupDirs(String relative) {
        String rel = relative.startsWith("/") ? relative.substring(1) : relative;
        List<Path> dirs = new ArrayList<>();
        for (Path h : v1Hierarchies) {
            dirs.add(h.resolve(rel));
        }
        if (v2Mount != null) {
            dirs.add(v2Mount.resolve(rel));
        }
        return dirs;
    }

    @Override
    public String toString() {
        return switch (mode()) {
            case V2 -> "cgroup v2";
            case V1 -> "cgroup v1";
            case HYBRID -> "cgroup hybrid (v1 controllers, v2 at " + v2Mount + (v2Controllers.isEmpty() ? "" : " with " + v2Controllers) + ")";
        };
    }
}
