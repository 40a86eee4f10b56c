package io.dsec.internal.layer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Reads {@code /proc/self/mountinfo}: which paths are mount points. */
public final class MountTable {
    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private MountTable() {
    }

    /** One line of mountinfo: the mount point, the filesystem type and the source. */
    public record Entry(Path mountPoint, String fsType, String source) {
    }

    public static List<Entry> read() {
        List<String> lines;
        try {
            lines = Files.readAllLines(MOUNTINFO);
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + MOUNTINFO, e);
        }
        List<Entry> entries = new ArrayList<>(lines.size());
        for (String line : lines) {
            // id parent major:minor root mountpoint options [optional fields...] - fstype source superoptions
            String[] fields = line.split(" ");
            if (fields.length < 5) {
                continue;
            }
            int dash = -1;
            for (int i = 6; i < fields.length; i++) {
                if (fields[i].equals("-")) {
                    dash = i;
                    break;
                }
            }
            String fsType = dash > 0 && dash + 1 < fields.length ? unescape(fields[dash + 1]) : "";
            String source = dash > 0 && dash + 2 < fields.length ? unescape(fields[dash + 2]) : "";
            entries.add(new Entry(Path.of(unescape(fields[4])), fsType, source));
        }
        return entries;
    }

    /** How many mounts are stacked on {@code path} (0 when it is not a mount point). */
    public static int mountCount(Path path) {
        Path target = path.toAbsolutePath().normalize();
        int count = 0;
        for (Entry entry : read()) {
            if (entry.mountPoint().equals(target)) {
                count++;
            }
        }
        return count;
    }

    public static boolean isMountPoint(Path path) {
        return mountCount(path) > 0;
    }

    /** Mount points at or under {@code dir}, deepest first (the order to unmount them in). */
    public static List<Path> mountPointsUnder(Path dir) {
        Path base = dir.toAbsolutePath().normalize();
        List<Path> found = new ArrayList<>();
        for (Entry entry : read()) {
            if (entry.mountPoint().startsWith(base)) {
                found.add(entry.mountPoint());
            }
        }
        // Later lines are mounted later (and so on top); unmount those first.
        java.util.Collections.reverse(found);
        found.sort((a, b) -> Integer.compare(b.getNameCount(), a.getNameCount()));
        return found;
    }

    /** mountinfo escapes space, tab, newline and backslash as {@code \ooo}. */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '7') {
                return false;
            }
        }
        return true;
    }
}
