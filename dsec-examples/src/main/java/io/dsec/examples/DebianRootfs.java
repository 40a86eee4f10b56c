package io.dsec.examples;

import io.dsec.MissingPrerequisiteException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Debian root filesystem made with debootstrap (minbase plus the given packages), cached in a directory so
 * only the first run downloads anything.
 */
public final class DebianRootfs {
    private DebianRootfs() {
    }

    public static Path ensure(Path cacheDir, String suite, List<String> packages, String mirror) throws IOException, InterruptedException {
        String name = suite + "-minbase-" + String.join("-", packages).replace('.', '_');
        Path done = cacheDir.resolve(name);
        Path complete = cacheDir.resolve(name + ".complete");
        if (Files.exists(complete) && Files.isDirectory(done)) {
            return done;
        }
        if (!Files.isExecutable(Path.of("/usr/sbin/debootstrap"))) {
            throw new MissingPrerequisiteException("debootstrap is needed to build the demo's Debian base: apt-get install debootstrap");
        }
        Files.createDirectories(cacheDir);
        Path partial = cacheDir.resolve(name + ".partial");
        deleteTree(partial);
        System.out.printf("building the Debian base with debootstrap (%s, minbase + %s); cached in %s after this run%n", suite, packages, done);
        Process p = new ProcessBuilder("debootstrap", "--variant=minbase", "--include=" + String.join(",", packages), suite,
            partial.toString(), mirror).redirectErrorStream(true).redirectOutput(cacheDir.resolve(name + ".log").toFile()).start();
        if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException("debootstrap failed; see " + cacheDir.resolve(name + ".log"));
        }
        // Caches a package manager keeps are of no use in a read-only base layer.
        deleteTree(partial.resolve("var/cache/apt/archives"));
        Files.createDirectories(partial.resolve("var/cache/apt/archives/partial"));
        deleteTree(done);
        Files.move(partial, done);
        Files.writeString(complete, "");
        return done;
    }

    private static void deleteTree(Path dir) throws IOException, InterruptedException {
        if (Files.exists(dir)) {
            Process p = new ProcessBuilder("rm", "-rf", "--one-file-system", dir.toString()).inheritIO().start();
            p.waitFor();
        }
    }
}
