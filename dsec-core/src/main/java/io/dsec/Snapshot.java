package io.dsec;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A sandbox's state at one step, kept in the host's layer store: the image it ran and the chain of diffs its
 * snapshots captured. Any host using the same store can branch it by id.
 */
public interface Snapshot {
    /** {@code snap-<hex>}: names the snapshot in the store. */
    String id();

    /** The snapshot this one was taken on top of (a sandbox branched from it), or empty for one taken of a fresh image. */
    Optional<String> parentId();

    /** Base, workspace, toolkit and the whole diff chain, oldest diff first: what a branch mounts. */
    Image image();

    /** The diff this snapshot added (the last of {@code image().diffs()}, unless the chain was squashed into one). */
    Layer diff();

    /** The spec of the sandbox it was taken of: env, workdir, labels and limits, which branches start with. */
    SandboxSpec spec();

    Instant createdAt();

    /** Creates {@code n} sandboxes restored from this snapshot on the host that made or found it. */
    List<Sandbox> branch(int n);

    /** Labels the caller gave the snapshot. */
    Map<String, String> labels();

    /** What taking it cost (pause, total time, bytes), as recorded by the host that took it; empty when unknown. */
    default Optional<SnapshotTimings> timings() {
        return Optional.empty();
    }
}
