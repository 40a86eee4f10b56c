package io.dsec;

import java.util.concurrent.CompletableFuture;

/**
 * One sandbox: a root filesystem composed of read-only layers with a private writable upper, its own
 * namespaces and cgroup, and an agent as PID 1 that runs commands and serves files. Its processes do not
 * depend on the JVM: they keep running if the JVM dies. {@link #close()} kills them and removes everything.
 */
public interface Sandbox extends AutoCloseable {
    /** A host-unique id, also the OCI container id. */
    String id();

    SandboxSpec spec();

    SandboxState state();

    /** Runs argv (no shell) and waits for it. */
    default ExecResult exec(String... argv) {
        return exec(Exec.of(argv));
    }

    /** Runs a command and waits for it; a non-zero exit is a result, not an exception. */
    default ExecResult exec(Exec exec) {
        return execAsync(exec).join();
    }

    /** Starts a command; many may run at once in one sandbox. */
    CompletableFuture<ExecResult> execAsync(Exec exec);

    SandboxFiles files();

    /** Changes how this sandbox's processes compete for CPU, at once (its cgroup's weight). */
    void cpuClass(CpuClass cls);

    /** The CPU class it has now. */
    CpuClass cpuClass();

    /**
     * Captures what this sandbox changed as a new diff layer in the host's store, freezing it only as long as consistency
     * needs; it then goes on running. Branch the result with {@link Snapshot#branch(int)}.
     */
    default Snapshot snapshot() {
        return snapshot(SnapshotMode.FILESYSTEM, java.util.Map.of());
    }

    /** A snapshot of the given mode, with the caller's labels. */
    Snapshot snapshot(SnapshotMode mode, java.util.Map<String, String> labels);

    /** Kills every process, unmounts the root, removes the cgroup and the private upper. Idempotent. */
    @Override
    void close();
}
