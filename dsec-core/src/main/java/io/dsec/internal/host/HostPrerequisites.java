package io.dsec.internal.host;

import io.dsec.MissingPrerequisiteException;
import io.dsec.internal.nativeio.Posix;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Checks, once per host, what the container backend needs from the machine, and says how to fix what is missing. */
final class HostPrerequisites {
    private HostPrerequisites() {
    }

    static void check() {
        requireRoot(Posix.isRoot());
        requireFilesystem("erofs", "the kernel lacks EROFS: enable CONFIG_EROFS_FS (file-backed mounts need kernel 6.12 or newer) or load it with 'modprobe erofs'");
        requireFilesystem("overlay", "the kernel lacks overlayfs: enable CONFIG_OVERLAY_FS or load it with 'modprobe overlay'");
    }

    static void requireRoot(boolean root) {
        if (!root) {
            throw new MissingPrerequisiteException("dsec needs root: it mounts EROFS layers and overlayfs and drives an OCI runtime. "
                + "Run the JVM as root (rootless mode is not supported yet).");
        }
    }

    private static void requireFilesystem(String fs, String fix) {
        if (hasFilesystem(fs)) {
            return;
        }
        try {
            Process p = new ProcessBuilder("modprobe", fs).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (IOException e) {
            // No modprobe: the check below says what to do.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!hasFilesystem(fs)) {
            throw new MissingPrerequisiteException(fix);
        }
    }

    private static boolean hasFilesystem(String fs) {
        try {
            return Files.readAllLines(Path.of("/proc/filesystems")).stream()
                .anyMatch(l -> l.endsWith("\t" + fs) || l.trim().equals(fs));
        } catch (IOException e) {
            return false;
        }
    }
}
