package io.dsec.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Compiles the test programs in src/test/c with gcc -static, once per build, into target/. */
public final class StaticBinaries {
    private StaticBinaries() {
    }

    /** The seccomp probe (src/test/c/probe.c). */
    public static Path probe() {
        return compile("probe");
    }

    /** {@code src/test/c/<name>.c} of the module under test, compiled static into target/test-bin/<name> when newer. */
    public static synchronized Path compile(String name) {
        Capabilities.requireTool("gcc", "gcc libc6-dev");
        Path source = Path.of("src/test/c/" + name + ".c").toAbsolutePath();
        Path out = Path.of("target/test-bin/" + name).toAbsolutePath();
        try {
            if (Files.exists(out) && Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(source)) >= 0) {
                return out;
            }
            Files.createDirectories(out.getParent());
            Process p = new ProcessBuilder("gcc", "-static", "-O1", "-o", out.toString(), source.toString()).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("gcc -static " + source.getFileName() + " failed: " + log);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
