package io.dsec.internal.host;

import io.dsec.AgentException;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxFiles;
import io.dsec.SandboxSpec;
import io.dsec.SandboxState;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.agent.AgentFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/** One container sandbox. Closing it runs its teardown: agent connection, container, root mount, layers, directory. */
final class ContainerSandbox implements Sandbox {
    private final String id;
    private final SandboxSpec spec;
    private final Path dir;
    private final AgentConnection connection;
    private final Closer teardown;
    private final Consumer<String> onClosed;
    private final Path runtimeLog;
    private final SandboxFiles files;
    private volatile SandboxState state = SandboxState.RUNNING;

    ContainerSandbox(String id, SandboxSpec spec, Path dir, AgentConnection connection, Closer teardown,
                     Consumer<String> onClosed, Path runtimeLog) {
        this.id = id;
        this.spec = spec;
        this.dir = dir;
        this.connection = connection;
        this.teardown = teardown;
        this.onClosed = onClosed;
        this.runtimeLog = runtimeLog;
        this.files = new GuardedFiles(new AgentFiles(connection), this::ensureUsable);
        connection.onClose(() -> {
            if (state == SandboxState.RUNNING) {
                state = SandboxState.DEAD;
            }
        });
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public SandboxSpec spec() {
        return spec;
    }

    @Override
    public SandboxState state() {
        return state;
    }

    /** The host directory holding this sandbox's bundle, upper and logs. */
    Path dir() {
        return dir;
    }

    @Override
    public CompletableFuture<ExecResult> execAsync(Exec exec) {
        ensureUsable();
        return connection.exec(exec, spec.env(), spec.workdir());
    }

    @Override
    public SandboxFiles files() {
        return files;
    }

    private void ensureUsable() {
        SandboxState now = state;
        if (now == SandboxState.CLOSED) {
            throw new SandboxClosedException("sandbox " + id + " is closed; create a new one");
        }
        if (now == SandboxState.DEAD) {
            throw new AgentException("sandbox " + id + " is dead: its agent went away (killed, or out of memory). Last runtime output: "
                + lastLog() + ". Close it and create a new one.");
        }
    }

    private String lastLog() {
        try {
            if (!Files.exists(runtimeLog)) {
                return "(none)";
            }
            String text = Files.readString(runtimeLog, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "(none)" : text.substring(Math.max(0, text.length() - 500));
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    @Override
    public synchronized void close() {
        if (state == SandboxState.CLOSED) {
            return;
        }
        state = SandboxState.CLOSED;
        try {
            teardown.close();
        } finally {
            onClosed.accept(id);
        }
    }

    @Override
    public String toString() {
        return "Sandbox[" + id + ", " + state + "]";
    }
}
