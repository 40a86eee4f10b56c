package io.dsec.spi;

import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.Snapshot;
import io.dsec.SnapshotMode;
import io.dsec.Snapshots;
import io.dsec.spi.LayerStore.BuiltImage;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Takes, stores and branches snapshots for a sandbox host. dsec-core finds one with {@link java.util.ServiceLoader}
 * (dsec-snapshot provides it); without one, snapshots fail with a message saying which module to add.
 */
public interface SnapshotEngine {

    /** Binds the engine to a host; the host closes the result when it closes. */
    Bound open(Host host);

    /** What the engine needs from a host. */
    interface Host {
        /** The host's layer store: diffs go there, and snapshot records as documents. */
        LayerStore store();

        /** The host's state directory; the engine keeps scratch trees under {@code <stateDir>/snapshots}. */
        Path stateDir();

        /**
         * Builds a diff layer image of {@code directory} into the store's staging directory, keeping per-file mtimes and
         * xattrs (overlay whiteouts and opaque markers included); with {@code keepHoles}, files are stored in chunks so
         * that the holes of sparse files stay holes (slower to build: ask for it only when the tree has sparse files).
         */
        BuiltImage buildDiffImage(Path directory, boolean keepHoles);

        /** Mounts a stored layer read-only (shared with sandboxes); close the result to release it. */
        MountedLayerHandle mount(io.dsec.Layer layer);

        /** Creates a sandbox, as {@link io.dsec.SandboxHost#create}. */
        Sandbox create(SandboxSpec spec);

        /** The sandboxes this host has open. */
        Collection<Sandbox> sandboxes();

        /** Where the toolkit appears inside sandboxes (a mount point, not part of any diff). */
        String toolkitPath();

        /** Diff chains longer than this are squashed into one diff; 0 for the engine's default. */
        int squashDepth();

        /** The public host, for snapshots to branch on. */
        io.dsec.SandboxHost publicHost();
    }

    /** A read-only mounted layer. */
    interface MountedLayerHandle extends AutoCloseable {
        Path path();

        @Override
        void close();
    }

    /** What the engine needs from a container sandbox. */
    interface Source {
        String id();

        SandboxSpec spec();

        /** The overlay upper directory: everything the sandbox changed. */
        Path upperDir();

        /**
         * Freezes every process of the sandbox with the cgroup freezer and returns once they are frozen. Throws (and
         * leaves the sandbox thawed) when the freezer cannot freeze it.
         */
        void freeze();

        /** Thaws the sandbox; harmless when it is not frozen. */
        void thaw();

        /** True while the cgroup freezer holds the sandbox. */
        boolean isFrozen();
    }

    /** An engine bound to one host. */
    interface Bound extends AutoCloseable {
        /** Takes a snapshot; the caller made sure {@code source} is running and stays open meanwhile. */
        Snapshot snapshot(Source source, SnapshotMode mode, Map<String, String> labels);

        List<Sandbox> branch(Snapshot snapshot, int n);

        Snapshots snapshots();

        @Override
        default void close() {
        }
    }
}
