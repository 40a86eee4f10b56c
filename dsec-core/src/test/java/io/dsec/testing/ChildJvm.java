package io.dsec.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM on this test's classpath, running a main class that prints {@code READY <value>} once it has made what
 * the test needs; the test then kills it to see what outlives a JVM. Its standard error goes to a log file.
 */
public final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final Path log;

    private ChildJvm(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    public static ChildJvm start(Class<?> main, Path log, String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), main.getName()));
        argv.addAll(List.of(args));
        return new ChildJvm(new ProcessBuilder(argv).redirectError(log.toFile()).start(), log);
    }

    /** The value after {@code READY}, or null if the child ended without printing it (see {@link #log()}). */
    public String awaitReady() throws IOException {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith("READY ")) {
                    return line.substring(6).trim();
                }
            }
        }
        return null;
    }

    /** SIGKILLs the child and waits for it; returns its exit status (137). */
    public int kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the child JVM did not die within 30 s of SIGKILL");
        }
        return process.exitValue();
    }

    public Path log() {
        return log;
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
