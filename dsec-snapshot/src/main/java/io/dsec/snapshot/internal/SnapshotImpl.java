package io.dsec.snapshot.internal;

import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.Snapshot;
import io.dsec.SnapshotTimings;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A snapshot as its record says, bound to the host that took or found it. */
final class SnapshotImpl implements Snapshot {
    private final SnapshotRecord record;
    private final HostSnapshots host;
    private final Image image;
    private final SandboxSpec spec;

    SnapshotImpl(SnapshotRecord record, HostSnapshots host) {
        this.record = record;
        this.host = host;
        this.image = record.image().toImage();
        this.spec = record.spec().toSpec(image);
    }

    SnapshotRecord record() {
        return record;
    }

    @Override
    public String id() {
        return record.id();
    }

    @Override
    public Optional<String> parentId() {
        return Optional.ofNullable(record.parent());
    }

    @Override
    public Image image() {
        return image;
    }

    @Override
    public Layer diff() {
        return record.diff().toLayer();
    }

    @Override
    public SandboxSpec spec() {
        return spec;
    }

    @Override
    public Instant createdAt() {
        return Instant.parse(record.createdAt());
    }

    @Override
    public List<Sandbox> branch(int n) {
        return host.publicHost().branch(this, n);
    }

    @Override
    public Map<String, String> labels() {
        return record.labels() == null ? Map.of() : record.labels();
    }

    @Override
    public Optional<SnapshotTimings> timings() {
        return Optional.ofNullable(record.timings()).map(t -> t.toTimings(record.squashed()));
    }

    /** True when the chain was squashed into one diff when this snapshot was taken. */
    public boolean squashed() {
        return record.squashed();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Snapshot s && s.id().equals(id());
    }

    @Override
    public int hashCode() {
        return id().hashCode();
    }

    @Override
    public String toString() {
        return "Snapshot[" + id() + ", " + image.diffs().size() + " diff(s)" + (record.squashed() ? ", squashed" : "") + "]";
    }
}
