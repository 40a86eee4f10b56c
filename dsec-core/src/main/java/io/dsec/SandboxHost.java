package io.dsec;

import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The entry point a rollout worker holds, one per host: it builds layers and creates sandboxes. Closing it
 * closes every sandbox it created and unmounts every layer.
 */
public interface SandboxHost extends AutoCloseable {
    Layers layers();

    /**
     * Creates a sandbox and waits until its agent answers. On failure nothing of it is left behind. It is first
     * admitted: if the host is full it waits in the admission queue (priority, then fair across
     * {@link SandboxSpec#tag() tags}); it throws {@link AdmissionException} if the spec is larger than the host, the
     * queue is full or the wait times out.
     */
    Sandbox create(SandboxSpec spec);

    /**
     * Creates a sandbox on the host's executor; many may be created at once. Goes through the same admission queue as
     * {@link #create} without holding a thread while it waits; the future fails with {@link AdmissionException} when
     * {@code create} would throw it.
     */
    CompletableFuture<Sandbox> createAsync(SandboxSpec spec);

    /** What admission control is doing: queue length, creations in flight, admitted, rejected, waits, allocation. */
    AdmissionStats admission();

    /** Creates {@code n} sandboxes restored from a snapshot: its diff chain over its image, each with its own empty upper. */
    List<Sandbox> branch(Snapshot snapshot, int n);

    /** Branches a snapshot by id, also one another host made in the same store. */
    default List<Sandbox> branch(String snapshotId, int n) {
        return branch(snapshots().get(snapshotId).orElseThrow(() -> new SnapshotException("no snapshot " + snapshotId
            + " in this host's layer store: check the id, and that this host uses the store the snapshot was taken into")), n);
    }

    /** The snapshots in this host's layer store. */
    Snapshots snapshots();

    /** The sandboxes this host has open. */
    Collection<Sandbox> sandboxes();

    Optional<Sandbox> sandbox(String id);

    /** Where the host keeps layers, sandbox bundles and runtime state. */
    Path stateDir();

    /** A short description of the backend in use, such as {@code runc 1.1.5 (cgroup v1)}. */
    String backendDescription();

    /** Host memory: MemTotal/MemAvailable, PSI (NaN without it), whether DAMON is there, page cache reclaimed so far. */
    MemoryStats memory();

    /** Reclaims page cache from the sandbox's cgroup (its memory limit is unchanged afterwards); returns bytes freed. */
    long reclaimPageCache(Sandbox sandbox);

    @Override
    void close();
}
