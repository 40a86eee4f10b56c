package io.dsec.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The baseline: Debian's podman running the same root filesystem, imported as an image. */
final class Podman {
    static final String IMAGE = "localhost/dsec-bench-base:latest";

    private Podman() {
    }

    static boolean available() {
        try {
            return new ProcessBuilder("podman", "--version").redirectErrorStream(true).start().waitFor() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    static String version() throws IOException, InterruptedException {
        return run(List.of("podman", "--version")).trim();
    }

    /** Imports {@code rootfs} as {@link #IMAGE}. */
    static void importRootfs(Path rootfs) throws IOException, InterruptedException {
        String out = run(List.of("bash", "-c", "tar -C '" + rootfs + "' -c . | podman import - " + IMAGE));
        if (out.contains("Error")) {
            throw new IOException("podman import failed: " + out);
        }
    }

    static void removeImage() throws IOException, InterruptedException {
        run(List.of("podman", "rmi", "-f", IMAGE));
    }

    /** {@code podman run --rm} of argv: the whole life of a container, as a podman user starts one. */
    static List<String> runArgv(String... argv) {
        List<String> cmd = new ArrayList<>(List.of("podman", "run", "--rm", "--network", "none",
            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", IMAGE));
        cmd.addAll(List.of(argv));
        return cmd;
    }

    static String run(List<String> argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new IOException(argv + " timed out");
        }
        if (p.exitValue() != 0) {
            throw new IOException(argv + " exited " + p.exitValue() + ": " + out);
        }
        return out;
    }
}
