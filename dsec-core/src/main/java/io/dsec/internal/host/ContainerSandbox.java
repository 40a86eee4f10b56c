package io.dsec.internal.host;

import io.dsec.AgentException;
import io.dsec.CpuClass;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxFiles;
import io.dsec.SandboxSpec;
import io.dsec.SandboxState;
import io.dsec.Snapshot;
import io.dsec.SnapshotException;
import io.dsec.SnapshotMode;
import io.dsec.spi.SnapshotEngine;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.agent.AgentFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/** One container sandbox. Closing it runs its teardown: agent connection, container, root mount, layers, directory. */
final class ContainerSandbox implements Sandbox, SnapshotEngine.Source {
    /** Takes a snapshot of a sandbox: the host's engine. */
    interface Snapshotter {
        Snapshot snapshot(ContainerSandbox sandbox, SnapshotMode mode, Map<String, String> labels);
    }

    private static final long FREEZE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final String id;
    private final SandboxSpec spec;
    private final Path dir;
    private final AgentConnection connection;
    private final Closer teardown;
    private final Consumer<String> onClosed;
    private final Path runtimeLog;
    private final SandboxFiles files;
    private final List<Path> cgroupDirs;
    private final Snapshotter snapshotter;
    private final Object snapshotLock = new Object();
    private volatile CpuClass cpuClass;
    private volatile SandboxState state = SandboxState.RUNNING;

    ContainerSandbox(String id, SandboxSpec spec, Path dir, AgentConnection connection, Closer teardown,
                     Consumer<String> onClosed, Path runtimeLog, List<Path> cgroupDirs, Snapshotter snapshotter) {
        this.cgroupDirs = List.copyOf(cgroupDirs);
        this.cpuClass = spec.cpuClass();
        this.snapshotter = snapshotter;
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
    public Path upperDir() {
        return dir.resolve("upper");
    }

    @Override
    public Snapshot snapshot(SnapshotMode mode, Map<String, String> labels) {
        if (mode == null) {
            throw new io.dsec.InvalidSpecException("mode", null, "give SnapshotMode.FILESYSTEM");
        }
        ensureUsable();
        if (mode == SnapshotMode.MEMORY) {
            throw new SnapshotException("sandbox " + id + " is a container: it has no memory image to snapshot. Memory "
                + "snapshots (SnapshotMode.MEMORY) need a microVM sandbox (dsec-vmm); take SnapshotMode.FILESYSTEM here, and "
                + "re-run processes in the branches");
        }
        synchronized (snapshotLock) {
            ensureUsable();
            return snapshotter.snapshot(this, mode, labels == null ? Map.of() : labels);
        }
    }

    /** The freezer file of the cgroup: v1 {@code freezer.state}, else v2 {@code cgroup.freeze}. */
    private Path freezerFile() {
        for (Path d : cgroupDirs) {
            Path f = d.resolve("freezer.state");
            if (Files.exists(f)) {
                return f;
            }
        }
        for (Path d : cgroupDirs) {
            Path f = d.resolve("cgroup.freeze");
            if (Files.exists(f)) {
                return f;
            }
        }
        throw new SnapshotException("sandbox " + id + " has no cgroup freezer (looked for freezer.state and cgroup.freeze in "
            + cgroupDirs + "): mount the v1 freezer controller or use cgroup v2");
    }

    @Override
    public void freeze() {
        Path file = freezerFile();
        boolean v1 = file.getFileName().toString().equals("freezer.state");
        long deadline = System.nanoTime() + FREEZE_TIMEOUT_NANOS;
        try {
            Files.writeString(file, v1 ? "FROZEN" : "1");
            long spins = 0;
            while (!frozen(file, v1)) {
                if (System.nanoTime() > deadline) {
                    thaw();
                    throw new SnapshotException("sandbox " + id + " did not freeze within 10 s (" + file + "); it was thawed "
                        + "and goes on running. A process stuck in the kernel (D state) keeps a cgroup from freezing");
                }
                if (v1 && ++spins % 1000 == 0) {
                    Files.writeString(file, "FROZEN"); // the kernel's advice for a cgroup stuck in FREEZING
                }
                LockSupport.parkNanos(100_000);
            }
        } catch (IOException e) {
            thaw();
            throw new SnapshotException("could not freeze sandbox " + id + " through " + file + ": " + e.getMessage(), e);
        }
    }

    private static boolean frozen(Path file, boolean v1) throws IOException {
        if (v1) {
            return Files.readString(file).strip().equals("FROZEN");
        }
        for (String line : Files.readAllLines(file.resolveSibling("cgroup.events"))) {
            if (line.equals("frozen 1")) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void thaw() {
        for (Path d : cgroupDirs) {
            try {
                Path v1 = d.resolve("freezer.state");
                if (Files.exists(v1)) {
                    Files.writeString(v1, "THAWED");
                }
                Path v2 = d.resolve("cgroup.freeze");
                if (Files.exists(v2)) {
                    Files.writeString(v2, "0");
                }
            } catch (IOException e) {
                if (Files.exists(d)) {
                    throw new SnapshotException("could not thaw sandbox " + id + " in " + d + ": " + e.getMessage()
                        + "; write THAWED to freezer.state (v1) or 0 to cgroup.freeze (v2) by hand", e);
                }
            }
        }
    }

    @Override
    public boolean isFrozen() {
        for (Path d : cgroupDirs) {
            try {
                Path v1 = d.resolve("freezer.state");
                if (Files.exists(v1) && !Files.readString(v1).strip().equals("THAWED")) {
                    return true;
                }
                Path v2 = d.resolve("cgroup.freeze");
                if (Files.exists(v2) && Files.readString(v2).strip().equals("1")) {
                    return true;
                }
            } catch (IOException e) {
                // the cgroup is going away
            }
        }
        return false;
    }

    @Override
    public CompletableFuture<ExecResult> execAsync(Exec exec) {
        ensureUsable();
        return connection.exec(exec, spec.env(), spec.workdir());
    }

    @Override
    public synchronized void cpuClass(CpuClass cls) {
        java.util.Objects.requireNonNull(cls, "cpuClass");
        ensureUsable();
        if (cls != cpuClass) {
            CpuWeights.apply(cgroupDirs, cls, id);
            cpuClass = cls;
        }
    }

    @Override
    public CpuClass cpuClass() {
        return cpuClass;
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
            try {
                if (isFrozen()) {
                    thaw(); // a snapshot may be copying: frozen processes would not die on their own
                }
            } catch (RuntimeException e) {
                // the runtime's delete kills what is left either way
            }
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
