package io.dsec.internal.layer;

import io.dsec.internal.nativeio.Posix;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;

/** Trees, tars and clean-up for the layer tests. */
final class LayerFixtures {
    private LayerFixtures() {
    }

    /**
     * The same small tree (files, a subdirectory, a symlink, a hardlink, an empty dir), created in the given order of
     * top-level names and with all mtimes set to {@code mtime}.
     */
    static Path tree(Path dir, boolean reverseOrder, Instant mtime) throws IOException {
        Files.createDirectories(dir);
        List<String> names = List.of("a.txt", "b.txt", "sub", "zzz", "empty");
        if (reverseOrder) {
            names = new java.util.ArrayList<>(names);
            java.util.Collections.reverse(names);
        }
        for (String name : names) {
            switch (name) {
                case "sub" -> {
                    Files.createDirectories(dir.resolve("sub/deeper"));
                    Files.writeString(dir.resolve("sub/deeper/x"), "x\n");
                    Files.writeString(dir.resolve("sub/y"), "y".repeat(10_000));
                }
                case "empty" -> Files.createDirectories(dir.resolve("empty"));
                default -> Files.writeString(dir.resolve(name), "content of " + name + "\n");
            }
        }
        Files.createSymbolicLink(dir.resolve("link"), Path.of("a.txt"));
        Files.createLink(dir.resolve("hard"), dir.resolve("b.txt"));
        setModes(dir);
        try (var paths = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                // The link itself, not its target: a symlink's own mtime goes into the image too.
                Files.getFileAttributeView(p, java.nio.file.attribute.BasicFileAttributeView.class, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    .setTimes(FileTime.from(mtime), null, null);
            }
        }
        return dir;
    }

    private static void setModes(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                if (!Files.isSymbolicLink(p)) {
                    Files.setAttribute(p, "unix:mode", Files.isDirectory(p) ? 0755 : 0644);
                }
            }
        }
    }

    /** {@code tar -C dir -cf - .}: a plain tar with a {@code ./} entry and numeric owners. */
    static byte[] tarOf(Path dir) throws IOException, InterruptedException {
        Process tar = new ProcessBuilder("tar", "--numeric-owner", "-C", dir.toString(), "-cf", "-", ".")
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        byte[] bytes;
        try (InputStream in = tar.getInputStream()) {
            bytes = in.readAllBytes();
        }
        if (tar.waitFor() != 0) {
            throw new IOException("tar of " + dir + " failed");
        }
        return bytes;
    }

    static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        p.getInputStream().transferTo(out);
        int rc = p.waitFor();
        if (rc != 0) {
            throw new IOException(String.join(" ", command) + " exited " + rc + ": " + out.toString(StandardCharsets.UTF_8));
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** Last resort after a test: lazily unmounts anything still mounted under {@code dir}. */
    static void detachEverythingUnder(Path dir) {
        if (dir == null) {
            return;
        }
        Path real;
        try {
            real = dir.toRealPath();
        } catch (IOException e) {
            real = dir.toAbsolutePath().normalize();
        }
        for (Path mountPoint : MountTable.mountPointsUnder(real)) {
            try {
                Posix.unmount(mountPoint, Posix.MNT_DETACH);
            } catch (RuntimeException e) {
                System.err.println("could not detach " + mountPoint + ": " + e);
            }
        }
    }

    static void deleteTree(Path dir) {
        try {
            ErofsImageBuilder.deleteTree(dir);
        } catch (UncheckedIOException e) {
            // best effort
        }
    }
}
