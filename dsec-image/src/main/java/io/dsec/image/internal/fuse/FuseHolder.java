package io.dsec.image.internal.fuse;

import io.dsec.DsecException;
import io.dsec.MissingPrerequisiteException;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code dsec-fuse-holder} process: it keeps a reference to the /dev/fuse file of a connection so that the
 * connection (and the mount) outlive the JVM that serves it. Addressed through a pidfd, so a reused pid is never
 * signalled.
 */
final class FuseHolder {
    private static final Logger LOG = LoggerFactory.getLogger(FuseHolder.class);
    static final String BINARY = "dsec-fuse-holder";
    private static final int STOP_WAIT_MILLIS = 10_000;

    private final long pid;
    private final int fd;
    private final Process process;
    private int pidfd;

    private FuseHolder(long pid, int fd, int pidfd, Process process) {
        this.pid = pid;
        this.fd = fd;
        this.pidfd = pidfd;
        this.process = process;
    }

    long pid() {
        return pid;
    }

    /** Starts a holder that takes a copy of {@code fuseFd} of this JVM; returns once the holder has it. */
    static FuseHolder spawn(FuseState state, int fuseFd) {
        Path binary = install(state);
        List<String> command = List.of(binary.toString(), "--pid", Long.toString(ProcessHandle.current().pid()),
            "--fd", Integer.toString(fuseFd), "--state", state.holderFile().toString());
        Process process;
        try {
            process = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.appendTo(state.holderLog().toFile()))
                .start();
        } catch (IOException e) {
            throw new DsecException("cannot start the FUSE fd holder " + binary + ": " + e.getMessage(), e);
        }
        String line;
        try (InputStream out = process.getInputStream()) {
            line = new BufferedReader(new InputStreamReader(out, StandardCharsets.US_ASCII)).readLine();
            process.getOutputStream().close();
        } catch (IOException e) {
            line = null;
        }
        if (!"ready".equals(line)) {
            process.destroyForcibly();
            String exit = "";
            try {
                if (process.waitFor(STOP_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                    exit = " (exit code " + process.exitValue() + ")";
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw new DsecException("the FUSE fd holder failed" + exit + ": " + tail(state.holderLog())
                + "; it needs root (pidfd_getfd, Linux 5.6+)");
        }
        long[] held = state.loadHolder();
        if (held == null || held[0] != process.pid()) {
            process.destroyForcibly();
            throw new DsecException("the FUSE fd holder did not write its state file " + state.holderFile());
        }
        int pidfd = FuseNative.pidfdOpen(process.pid());
        LOG.debug("FUSE fd holder {} holds fd {}", process.pid(), held[1]);
        return new FuseHolder(process.pid(), (int) held[1], pidfd, process);
    }

    /** The holder named in {@code state}, when it still runs; null otherwise. */
    static FuseHolder find(FuseState state) {
        long[] held = state.loadHolder();
        if (held == null) {
            return null;
        }
        int pidfd;
        try {
            pidfd = FuseNative.pidfdOpen(held[0]);
        } catch (DsecException e) {
            return null; // gone
        }
        // The pidfd pins the process: check that it is our holder and not a process that got the pid again.
        String cmdline;
        try {
            cmdline = Files.readString(Path.of("/proc", Long.toString(held[0]), "cmdline"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            cmdline = "";
        }
        if (!cmdline.contains(BINARY) || !cmdline.contains(state.holderFile().toString())) {
            FuseNative.closeQuietly(pidfd);
            return null;
        }
        return new FuseHolder(held[0], (int) held[1], pidfd, null);
    }

    /** A copy of the held /dev/fuse fd in this JVM (close-on-exec). */
    int takeFd() {
        int copy = FuseNative.pidfdGetfd(pidfd, fd, pid);
        try {
            Path target = Files.readSymbolicLink(Path.of("/proc/self/fd", Integer.toString(copy)));
            if (!target.toString().equals("/dev/fuse")) {
                FuseNative.closeQuietly(copy);
                throw new DsecException("fd " + fd + " of the FUSE fd holder " + pid + " is " + target + ", not /dev/fuse");
            }
        } catch (IOException e) {
            FuseNative.closeQuietly(copy);
            throw new UncheckedIOException(e);
        }
        return copy;
    }

    /** SIGTERM, then SIGKILL if it does not exit within 10 s; returns once the process has exited. Idempotent. */
    synchronized void stop() {
        if (pidfd < 0) {
            return;
        }
        try {
            if (FuseNative.pidfdSignal(pidfd, FuseNative.SIGTERM) && !FuseNative.pollIn(pidfd, STOP_WAIT_MILLIS)) {
                LOG.warn("FUSE fd holder {} ignored SIGTERM; killing it", pid);
                FuseNative.pidfdSignal(pidfd, FuseNative.SIGKILL);
                FuseNative.pollIn(pidfd, STOP_WAIT_MILLIS);
            }
        } finally {
            FuseNative.closeQuietly(pidfd);
            pidfd = -1;
        }
        if (process != null) {
            try {
                process.waitFor(STOP_WAIT_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Copies the holder from the classpath into the state directory (the jar's copy cannot be executed). */
    private static Path install(FuseState state) {
        Path target = state.holderBinary();
        try (InputStream in = FuseHolder.class.getResourceAsStream(BINARY)) {
            if (in == null) {
                throw new MissingPrerequisiteException("the FUSE fd holder (" + BINARY + ") is not on the classpath: "
                    + "dsec-image is built with gcc -static (apt-get install gcc libc6-dev) and packs it next to "
                    + FuseHolder.class.getName());
            }
            Path tmp = target.resolveSibling(BINARY + ".tmp");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot install the FUSE fd holder into " + target, e);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return lines.isEmpty() ? "no message" : String.join("; ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        } catch (IOException e) {
            return "no message (" + log + " unreadable)";
        }
    }
}
