package io.dsec.testing;

import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.OciRuntime;
import io.dsec.SandboxHost;
import io.dsec.Sandboxes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * A real {@link SandboxHost} on a fresh state directory under /tmp (named {@code dsec-it-*}, which the leak check
 * looks for), with a busybox base, a small workspace and a toolkit. {@link #close()} closes the host and then, as
 * a last resort even when a test failed half-way, deletes runtime containers and lazily unmounts anything left
 * under the directory before removing it.
 */
public final class TestHost implements AutoCloseable {
    public final Path dir;
    public final SandboxHost host;
    public final Layer base;
    public final Layer workspace;
    public final Layer toolkit;

    private TestHost(Path dir, SandboxHost host, Layer base, Layer workspace, Layer toolkit) {
        this.dir = dir;
        this.host = host;
        this.base = base;
        this.workspace = workspace;
        this.toolkit = toolkit;
    }

    public static TestHost start(OciRuntime runtime) {
        return start(runtime, b -> b);
    }

    /** A host whose builder {@code configure} adjusts (admission settings, say) after the state dir and runtime are set. */
    public static TestHost start(OciRuntime runtime, UnaryOperator<Sandboxes.Builder> configure) {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        Path dir;
        try {
            dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        SandboxHost host = null;
        try {
            host = configure.apply(Sandboxes.builder().stateDir(dir.resolve("state")).runtime(runtime)).build();
            Path src = Files.createDirectories(dir.resolve("src"));
            Layer base = host.layers().fromDirectory(LayerKind.BASE, "busybox:1", TestImages.busyboxRootfs(src.resolve("base")));
            Layer workspace = host.layers().fromDirectory(LayerKind.WORKSPACE, "repo:1", TestImages.workspaceTree(src.resolve("workspace")));
            Path tk = Files.createDirectories(src.resolve("toolkit"));
            Files.writeString(tk.resolve("grade.sh"), "#!/bin/sh\necho graded\n", StandardCharsets.UTF_8);
            Files.setPosixFilePermissions(tk.resolve("grade.sh"), PosixFilePermissions.fromString("rwxr-xr-x"));
            Layer toolkit = host.layers().fromDirectory(LayerKind.TOOLKIT, "harness:1", tk);
            return new TestHost(dir, host, base, workspace, toolkit);
        } catch (IOException e) {
            TestHost partial = new TestHost(dir, host, null, null, null);
            partial.close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException | Error e) {
            TestHost partial = new TestHost(dir, host, null, null, null);
            try {
                partial.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    public Image image() {
        return Image.of(base, workspace, toolkit);
    }

    @Override
    public void close() {
        RuntimeException failure = null;
        try {
            if (host != null) {
                host.close();
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        try {
            lastResortCleanup(dir);
        } catch (RuntimeException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Removes whatever a failed test left under {@code dir}: runtime containers, mounts, files. */
    public static void lastResortCleanup(Path dir) {
        // Any state directory under dir (a test may run several hosts, or a child JVM's) keeps runtime state in runtime/<name>.
        List<Path> runtimeRoots = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> walk = Files.walk(dir, 4)) {
                walk.filter(p -> Files.isDirectory(p) && p.getParent() != null && p.getParent().getFileName() != null
                    && p.getParent().getFileName().toString().equals("runtime") && List.of("crun", "runc").contains(p.getFileName().toString()))
                    .forEach(runtimeRoots::add);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        for (Path root : runtimeRoots) {
            String runtime = root.getFileName().toString();
            if (Capabilities.onPath(runtime)) {
                for (String id : run(runtime, "--root", root.toString(), "list", "-q").lines().map(String::trim).filter(s -> !s.isEmpty()).toList()) {
                    run(runtime, "--root", root.toString(), "delete", "--force", id);
                }
            }
        }
        List<String> mounted = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String mp = line.split(" ")[4];
                if (mp.startsWith(dir.toString() + "/")) {
                    mounted.add(mp);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        mounted.sort(Comparator.comparing(String::length).reversed());
        for (String mp : mounted) {
            run("umount", "-l", mp);
        }
        if (Files.exists(dir)) {
            try (Stream<Path> walk = Files.walk(dir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    static String run(String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(60, TimeUnit.SECONDS);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
