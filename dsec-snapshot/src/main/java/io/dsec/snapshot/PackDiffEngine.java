package io.dsec.snapshot;

import io.dsec.snapshot.internal.HostSnapshots;
import io.dsec.spi.SnapshotEngine;

/**
 * The pack_diff snapshot engine: a snapshot is a copy of the sandbox's overlay upper (taken in passes, the last one with
 * the sandbox frozen) built into an EROFS diff layer and pushed to the host's layer store, plus a JSON record beside it;
 * a branch is a sandbox whose lowers are the snapshot's diff chain over its workspace and base. dsec-core finds it with
 * {@link java.util.ServiceLoader}: having dsec-snapshot on the classpath is all it takes.
 */
public final class PackDiffEngine implements SnapshotEngine {
    /** Diff chains longer than this are squashed into one diff unless the host sets its own depth. */
    public static final int DEFAULT_SQUASH_DEPTH = 8;

    @Override
    public Bound open(Host host) {
        return new HostSnapshots(host, host.squashDepth() > 0 ? host.squashDepth() : DEFAULT_SQUASH_DEPTH);
    }
}
