package io.dsec.snapshot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.ExecResult;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestImages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Layers, the in-sandbox tree tool and the torture tree shared by the snapshot ITs. */
final class SnapshotTestSupport {
    /** Paths the tree comparison leaves out: kernel file systems, dsec's agent mount and the toolkit (a mount point). */
    static final List<String> PRUNE = List.of("/proc", "/sys", "/dev", "/.dsec", "/opt/dsec");

    private SnapshotTestSupport() {
    }

    /** The static tree tool (src/test/c/treetool.c), compiled once per build. */
    static Path treetool() {
        return io.dsec.testing.StaticBinaries.compile("treetool");
    }

    /** Base (busybox), workspace and a toolkit holding the tree tool at /opt/dsec/treetool. */
    static Image buildImage(SandboxHost host, Path dir) throws IOException {
        Path src = Files.createDirectories(dir.resolve("src"));
        Layer base = host.layers().fromDirectory(LayerKind.BASE, "busybox:1", TestImages.busyboxRootfs(src.resolve("base")));
        Layer workspace = host.layers().fromDirectory(LayerKind.WORKSPACE, "repo:1", TestImages.workspaceTree(src.resolve("workspace")));
        Path tk = Files.createDirectories(src.resolve("toolkit"));
        Files.copy(treetool(), tk.resolve("treetool"));
        Files.setPosixFilePermissions(tk.resolve("treetool"), PosixFilePermissions.fromString("rwxr-xr-x"));
        Layer toolkit = host.layers().fromDirectory(LayerKind.TOOLKIT, "snaptools:1", tk);
        return Image.of(base, workspace, toolkit);
    }

    static String sh(Sandbox sb, String script) {
        ExecResult r = sb.exec("/bin/sh", "-c", script);
        assertThat(r.exitCode()).as("script failed in %s: %s\nstdout: %s\nstderr: %s", sb.id(), script, r.stdoutText(), r.stderrText()).isZero();
        return r.stdoutText();
    }

    /** The listing of the whole tree: one line per entry with type, mode, owner, size, mtime, link, content hash, xattrs, links. */
    static String dump(Sandbox sb) {
        List<String> argv = new ArrayList<>(List.of("/opt/dsec/treetool", "dump", "/"));
        argv.addAll(PRUNE);
        ExecResult r = sb.exec(argv.toArray(String[]::new));
        assertThat(r.exitCode()).as(r.stderrText()).isZero();
        return r.stdoutText();
    }

    /** Asserts two tree listings are equal, showing only the lines that differ. */
    static void assertSameTree(String actual, String expected, String what) {
        List<String> a = actual.lines().toList();
        List<String> e = expected.lines().toList();
        List<String> missing = e.stream().filter(l -> !a.contains(l)).toList();
        List<String> extra = a.stream().filter(l -> !e.contains(l)).toList();
        assertThat(missing.isEmpty() && extra.isEmpty())
            .as("%s differs from the expected tree:%n  expected but missing:%n    %s%n  present but not expected:%n    %s", what,
                String.join("\n    ", missing), String.join("\n    ", extra))
            .isTrue();
        assertThat(a).hasSameSizeAs(e);
    }

    /**
     * Builds the torture tree in a sandbox: files deleted from the base and the workspace, a directory replaced by a file
     * and back, opaque directories, renames, xattrs, hardlinks, symlinks, modes, owners, times, a sparse file, a fifo.
     */
    static void torture(Sandbox sb) {
        sh(sb, String.join("\n",
            "set -e",
            "rm /etc/hostname",                                               // a base file deleted: whiteout
            "rm -rf /repo && mkdir /repo && echo fresh > /repo/new",          // a workspace dir deleted and made again: opaque
            "rm -rf /home/agent && echo now-a-file > /home/agent",            // a base directory replaced by a file
            "rm -rf /usr/bin && echo x > /usr/bin && rm /usr/bin && mkdir /usr/bin && echo tool > /usr/bin/tool", // ... and back
            "mkdir -p /data/d1 && echo 1 > /data/d1/f && rm -rf /data/d1 && echo x > /data/d1 && rm /data/d1 && mkdir /data/d1",
            "echo 2 > /data/d1/g",
            "mv /etc/passwd /etc/passwd.moved",                               // a base file renamed
            "mv /root /root.moved",                                           // a base directory renamed (copied up, then removed)
            "mkdir -p /w/a/b && echo deep > /w/a/b/c && mv /w/a /w/z",       // an upper directory renamed
            "ln /w/z/b/c /w/hard1 && ln /w/z/b/c /w/hard2",                   // hardlinks
            "ln -s ../etc/group /w/sym && ln -s /nonexistent /w/dangling",    // symlinks
            "echo s > /w/suid && chmod 4755 /w/suid",
            "mkdir /w/sticky && chmod 1777 /w/sticky",
            "echo z > /w/zero && chmod 0 /w/zero",
            "echo o > /w/owned && chown 1000:1000 /w/owned && chown -h 1000:1000 /w/sym",
            "mkdir /w/agentdir && chown 1000:65534 /w/agentdir && chmod 2750 /w/agentdir",
            "/opt/dsec/treetool sparse /w/sparse 67108864",                  // 64 MiB, three small extents
            "mkfifo /w/fifo && chmod 0620 /w/fifo",
            "echo old > /w/old && touch -d '2001-02-03 04:05:06' /w/old",
            "/opt/dsec/treetool setx /w/z/b/c user.color red",
            "/opt/dsec/treetool setx /w user.dir yes",
            "/opt/dsec/treetool setx /repo/new user.k v",
            "chmod 600 /etc/group && echo extra >> /bin/../etc/group",        // metadata and content of a base file
            "touch -d '2010-01-01 00:00:00' /etc/group",
            "dd if=/dev/zero of=/w/blob bs=4096 count=64 2>/dev/null",
            "rm -rf /tmp && mkdir /tmp && chmod 1777 /tmp"));
    }
}
