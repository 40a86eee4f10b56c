package io.dsec.internal.agent;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/** The real agent binary run on the host in {@code serve --listen} mode, for tests. */
final class AgentProcess implements AutoCloseable {
    final Path dir;
    final Path socket;
    final Process process;

    private AgentProcess(Path dir, Path socket, Process process) {
        this.dir = dir;
        this.socket = socket;
        this.process = process;
    }

    static Path binary() {
        URL url = AgentProcess.class.getResource("/io/dsec/internal/agent/dsec-agent");
        try {
            Path p = url != null ? Path.of(url.toURI()) : Path.of("target/classes/io/dsec/internal/agent/dsec-agent");
            if (!Files.isExecutable(p)) {
                throw new IllegalStateException("the agent binary " + p + " is missing; build with mvn -pl dsec-core generate-resources");
            }
            return p;
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static AgentProcess start() {
        try {
            Path dir = Files.createTempDirectory("dsec-agent-test");
            Path socket = dir.resolve("agent.sock");
            Process p = new ProcessBuilder(binary().toString(), "serve", "--listen", socket.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("agent.log").toFile())
                .start();
            return new AgentProcess(dir, socket, p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    AgentConnection connect(AgentIo io) {
        return AgentConnection.connect(io, socket, Duration.ofSeconds(30));
    }

    String log() {
        try {
            return Files.readString(dir.resolve("agent.log"));
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        deleteTree(dir);
    }

    static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        List<Path> paths = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(paths::add);
        } catch (IOException e) {
            return;
        }
        for (Path p : paths) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    /** Polls until the condition holds; fails after the deadline. */
    static void await(String what, Duration limit, BooleanSupplier condition) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what);
            }
        }
    }

    /** True when the pid is gone (or a zombie no one has reaped yet). */
    static boolean gone(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            return stat.substring(stat.lastIndexOf(')') + 2).startsWith("Z");
        } catch (IOException e) {
            return true;
        }
    }
}
