package io.dsec.image.internal.fuse;

import io.dsec.DsecException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a FUSE server keeps in its state directory so that another JVM can take over the connection:
 * <ul>
 * <li>{@code inodes}: {@code next <n> time <seconds>} then one {@code <ino> <name>} line per served name, so that a name
 * keeps its inode number across JVMs (the kernel caches nodeids);</li>
 * <li>{@code init}: what INIT negotiated (INIT is sent once per connection);</li>
 * <li>{@code holder}: {@code <pid> <fd>} of the fd holder, written by the holder itself;</li>
 * <li>{@code holder.log}: the holder's stderr, and {@code dsec-fuse-holder}, the copy of the holder that runs.</li>
 * </ul>
 * Every file is replaced atomically (temporary file and rename).
 */
final class FuseState {
    private final Path dir;

    FuseState(Path dir) {
        this.dir = dir;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new DsecException("cannot create the FUSE state directory " + dir + ": " + e.getMessage(), e);
        }
    }

    Path dir() {
        return dir;
    }

    Path holderFile() {
        return dir.resolve("holder");
    }

    Path holderLog() {
        return dir.resolve("holder.log");
    }

    Path holderBinary() {
        return dir.resolve("dsec-fuse-holder");
    }

    /** The persisted inode table: names, the next free inode number and the timestamp of every node. */
    static final class Inodes {
        final Map<String, Long> byName = new LinkedHashMap<>();
        long next = FuseCodec.ROOT_ID + 1;
        long time;
    }

    Inodes loadInodes() {
        Inodes inodes = new Inodes();
        inodes.time = System.currentTimeMillis() / 1000;
        Path file = dir.resolve("inodes");
        if (!Files.exists(file)) {
            return inodes;
        }
        try {
            var lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            for (int i = 0; i < lines.size(); i++) {
                String[] f = lines.get(i).trim().split(" ");
                if (i == 0) {
                    if (f.length != 4 || !f[0].equals("next") || !f[2].equals("time")) {
                        throw new DsecException("corrupt FUSE inode table " + file + ": bad first line '" + lines.get(0)
                            + "'; remove the state directory after unmounting");
                    }
                    inodes.next = Long.parseLong(f[1]);
                    inodes.time = Long.parseLong(f[3]);
                } else if (f.length == 2) {
                    inodes.byName.put(f[1], Long.parseLong(f[0]));
                }
            }
            return inodes;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the FUSE inode table " + file, e);
        } catch (NumberFormatException e) {
            throw new DsecException("corrupt FUSE inode table " + file + ": " + e.getMessage(), e);
        }
    }

    void saveInodes(Inodes inodes) {
        StringBuilder sb = new StringBuilder();
        sb.append("next ").append(inodes.next).append(" time ").append(inodes.time).append('\n');
        inodes.byName.forEach((name, ino) -> sb.append(ino).append(' ').append(name).append('\n'));
        writeAtomically(dir.resolve("inodes"), sb.toString());
    }

    void saveInit(FuseCodec.Init init) {
        writeAtomically(dir.resolve("init"), init.major() + " " + init.minor() + " " + init.flags() + " "
            + init.maxReadahead() + " " + init.maxPages() + "\n");
    }

    /** The INIT of the connection, or null when INIT had not been answered. */
    FuseCodec.Init loadInit() {
        Path file = dir.resolve("init");
        try {
            if (!Files.exists(file)) {
                return null;
            }
            String[] f = Files.readString(file, StandardCharsets.US_ASCII).trim().split(" ");
            return new FuseCodec.Init(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Long.parseLong(f[2]),
                Integer.parseInt(f[3]), Integer.parseInt(f[4]));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    void deleteInit() {
        try {
            Files.deleteIfExists(dir.resolve("init"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code [pid, fd]} of the holder, or null when there is none. */
    long[] loadHolder() {
        try {
            if (!Files.exists(holderFile())) {
                return null;
            }
            String[] f = Files.readString(holderFile(), StandardCharsets.US_ASCII).trim().split(" ");
            return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    void deleteHolder(long pid) {
        long[] current = loadHolder();
        if (current != null && current[0] == pid) {
            try {
                Files.deleteIfExists(holderFile());
            } catch (IOException e) {
                // the holder removes it too
            }
        }
    }

    static void writeAtomically(Path file, String content) {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try {
            Files.writeString(tmp, content, StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
