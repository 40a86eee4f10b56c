package io.dsec.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Trees to build test layers from. Their content is deterministic: the same host gives the same bytes, modes and (as
 * root) owners every time, so the layers built from them have the same digests.
 */
public final class TestImages {
    /** The host's static busybox, copied into rootfs trees. */
    public static final Path HOST_BUSYBOX = Path.of("/bin/busybox");

    /** Applets linked into {@code /bin} even when {@code busybox --list} cannot be run. */
    public static final List<String> COMMON_APPLETS = List.of("sh", "ls", "cat", "echo", "sleep", "id", "mkdir", "rm",
        "kill", "ps", "seq", "head", "tail", "wc", "touch", "stat", "ln", "mv", "cp", "chmod", "chown", "grep", "sed",
        "awk", "env", "true", "false", "printf", "test", "readlink", "dd", "mknod", "mount", "umount", "unshare",
        "nsenter", "hostname", "uname", "find", "xargs", "sort", "md5sum", "sha256sum", "tr", "cut", "tee", "yes",
        "timeout", "which", "whoami", "date", "df", "free", "nc", "ip", "ping", "wget");

    private static final String PASSWD = "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/home/agent:/bin/sh\n"
        + "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
    private static final String GROUP = "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n";

    private TestImages() {
    }

    /**
     * A minimal root filesystem in {@code dir} (created when missing): {@code /bin/busybox} from the host with a
     * symlink in {@code /bin} for each of its applets, {@code /etc/passwd} and {@code /etc/group} with root and
     * {@code agent} (1000:1000), and empty {@code /proc /sys /dev /tmp (1777) /root (0700) /home/agent /usr/bin}.
     * Skips the test (fails it under CI) unless the host has a statically linked {@code /bin/busybox}.
     *
     * @return {@code dir}
     */
    public static Path busyboxRootfs(Path dir) {
        Capabilities.require(isStaticBusybox(HOST_BUSYBOX),
            "needs a statically linked /bin/busybox: apt-get install busybox-static");
        try {
            Files.createDirectories(dir);
            mode(dir, 0755);
            for (String d : List.of("bin", "etc", "proc", "sys", "dev", "tmp", "root", "home", "home/agent", "usr", "usr/bin")) {
                Files.createDirectories(dir.resolve(d));
                mode(dir.resolve(d), 0755);
            }
            mode(dir.resolve("tmp"), 01777);
            mode(dir.resolve("root"), 0700);
            Path busybox = dir.resolve("bin/busybox");
            Files.copy(HOST_BUSYBOX, busybox, StandardCopyOption.REPLACE_EXISTING);
            mode(busybox, 0755);
            TreeSet<String> applets = new TreeSet<>(COMMON_APPLETS);
            applets.addAll(listApplets());
            applets.remove("busybox");
            for (String applet : applets) {
                if (applet.isEmpty() || applet.contains("/")) {
                    continue;
                }
                Path link = dir.resolve("bin").resolve(applet);
                Files.deleteIfExists(link);
                Files.createSymbolicLink(link, Path.of("busybox"));
            }
            write(dir.resolve("etc/passwd"), PASSWD, 0644);
            write(dir.resolve("etc/group"), GROUP, 0644);
            write(dir.resolve("etc/hostname"), "sandbox\n", 0644);
            if (isRoot()) {
                chownTree(dir, 0, 0);
                owner(dir.resolve("home/agent"), 1000, 1000);
            }
            return fixMtimes(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("could not build a busybox rootfs in " + dir, e);
        }
    }

    /**
     * A small workspace tree in {@code dir}: {@code /repo/README} and the executable {@code /repo/app.sh}; as root, owned
     * by {@code agent} (1000:1000).
     *
     * @return {@code dir}
     */
    public static Path workspaceTree(Path dir) {
        try {
            Files.createDirectories(dir.resolve("repo"));
            mode(dir, 0755);
            mode(dir.resolve("repo"), 0755);
            write(dir.resolve("repo/README"), "A test workspace for dsec.\n", 0644);
            write(dir.resolve("repo/app.sh"), "#!/bin/sh\necho \"hello from app.sh: $*\"\n", 0755);
            if (isRoot()) {
                owner(dir, 0, 0);
                chownTree(dir.resolve("repo"), 1000, 1000);
            }
            return fixMtimes(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("could not build a workspace tree in " + dir, e);
        }
    }

    /** Every path under {@code dir} (links themselves, not their targets) gets one fixed mtime, so trees build the same layer. */
    static Path fixMtimes(Path dir) {
        try {
            Process p = new ProcessBuilder("find", dir.toString(), "-exec", "touch", "-h", "-d", "@946684800", "{}", "+")
                .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                throw new IOException("touch failed: " + out);
            }
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("could not fix the mtimes under " + dir, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** True when {@code file} is an ELF executable without a program interpreter (PT_INTERP): statically linked. */
    public static boolean isStaticBusybox(Path file) {
        if (!Files.isRegularFile(file) || !Files.isExecutable(file)) {
            return false;
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer header = ByteBuffer.allocate(64);
            channel.read(header, 0);
            header.flip();
            if (header.remaining() < 64 || header.order(ByteOrder.LITTLE_ENDIAN).getInt(0) != 0x464c457f) { // "\177ELF" little-endian
                return false;
            }
            boolean is64 = header.get(4) == 2;
            header.order(header.get(5) == 1 ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN);
            long phoff = is64 ? header.getLong(0x20) : Integer.toUnsignedLong(header.getInt(0x1C));
            int phentsize = Short.toUnsignedInt(header.getShort(is64 ? 0x36 : 0x2A));
            int phnum = Short.toUnsignedInt(header.getShort(is64 ? 0x38 : 0x2C));
            ByteBuffer ph = ByteBuffer.allocate(4).order(header.order());
            for (int i = 0; i < phnum; i++) {
                ph.clear();
                channel.read(ph, phoff + (long) i * phentsize);
                if (ph.getInt(0) == 3) { // PT_INTERP: needs a dynamic loader
                    return false;
                }
            }
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static List<String> listApplets() {
        List<String> applets = new ArrayList<>();
        try {
            Process process = new ProcessBuilder(HOST_BUSYBOX.toString(), "--list")
                .redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0) {
                out.lines().map(String::strip).filter(l -> l.matches("[A-Za-z0-9_.\\[\\]-]+")).forEach(applets::add);
            }
        } catch (IOException e) {
            // fall back to COMMON_APPLETS
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return applets;
    }

    private static void write(Path file, String content, int mode) throws IOException {
        Files.writeString(file, content, StandardCharsets.UTF_8);
        mode(file, mode);
    }

    private static void mode(Path path, int mode) throws IOException {
        Files.setAttribute(path, "unix:mode", mode, LinkOption.NOFOLLOW_LINKS);
    }

    private static void owner(Path path, int uid, int gid) throws IOException {
        Files.setAttribute(path, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(path, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
    }

    private static void chownTree(Path root, int uid, int gid) throws IOException {
        try (var paths = Files.walk(root)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                owner(p, uid, gid);
            }
        }
    }

    private static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
