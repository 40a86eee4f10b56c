package io.dsec.snapshot.internal;

import io.dsec.DsecException;
import io.dsec.Image;
import io.dsec.InvalidSpecException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Snapshot;
import io.dsec.SnapshotException;
import io.dsec.SnapshotMode;
import io.dsec.Snapshots;
import io.dsec.spi.LayerStore;
import io.dsec.spi.LayerStore.BuiltImage;
import io.dsec.spi.SnapshotEngine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The snapshot engine bound to one host: takes snapshots of its sandboxes, branches snapshots into new sandboxes, and
 * lists and deletes the snapshot records in its layer store.
 *
 * <p>What a diff leaves out: {@code /.dsec}, the agent's mount point, which the runtime makes in every sandbox's upper
 * at start; it belongs to dsec (and to the agent version of the host that runs the branch), not to the trajectory.
 * Everything else in the upper is kept, the empty mount point of the toolkit included (so a branch's runtime finds it
 * and changes nothing).
 */
public final class HostSnapshots implements SnapshotEngine.Bound, Snapshots {
    private static final Logger LOG = LoggerFactory.getLogger(HostSnapshots.class);
    private static final Pattern ID = Pattern.compile("snap-[0-9a-f]{16,64}");
    static final Set<String> EXCLUDED = Set.of(".dsec");

    private final SnapshotEngine.Host host;
    private final int squashDepth;
    private final Path scratchRoot;
    private final SecureRandom random = new SecureRandom();
    /** Which snapshot each branch on this host was made from: the parent of snapshots taken of it. */
    private final Map<String, String> branchedFrom = new ConcurrentHashMap<>();

    public HostSnapshots(SnapshotEngine.Host host, int squashDepth) {
        this.host = host;
        this.squashDepth = squashDepth;
        this.scratchRoot = host.stateDir().resolve("snapshots").resolve("tmp");
        try {
            if (Files.exists(scratchRoot)) {
                Trees.deleteTree(scratchRoot); // left by a JVM that died while snapshotting
            }
            Files.createDirectories(scratchRoot);
        } catch (IOException e) {
            throw new SnapshotException("cannot prepare " + scratchRoot + " for snapshots: " + e.getMessage()
                + "; check that the state directory is writable", e);
        }
    }

    SandboxHost publicHost() {
        return host.publicHost();
    }

    @Override
    public Snapshots snapshots() {
        return this;
    }

    // ---------------------------------------------------------------------------------------------------- snapshot

    @Override
    public Snapshot snapshot(SnapshotEngine.Source source, SnapshotMode mode, Map<String, String> labels) {
        if (mode != SnapshotMode.FILESYSTEM) {
            throw new SnapshotException("container sandboxes take FILESYSTEM snapshots only; " + mode + " needs a microVM sandbox");
        }
        labels.forEach((k, v) -> {
            if (k == null || k.isEmpty() || v == null) {
                throw new InvalidSpecException("labels", labels, "labels need non-empty keys and non-null values");
            }
        });
        long start = System.nanoTime();
        String id = newId();
        Path scratch = scratchRoot.resolve(id);
        Path tree = scratch.resolve("tree");
        try {
            Files.createDirectories(scratch);
            UpperCopy copy = new UpperCopy(source.upperDir(), tree, EXCLUDED);
            UpperCopy.Pass first = copy.pass(false);
            UpperCopy.Pass catchUp = copy.pass(false);
            long pauseStart = System.nanoTime();
            UpperCopy.Pass last;
            source.freeze();
            try {
                last = copy.pass(true);
            } finally {
                source.thaw();
            }
            long pause = System.nanoTime() - pauseStart;
            LOG.debug("snapshot {} of {}: passes copied {}/{}/{} entries ({}/{}/{} bytes), the last one frozen", id, source.id(),
                first.entriesCopied(), catchUp.entriesCopied(), last.entriesCopied(), first.bytesCopied(), catchUp.bytesCopied(),
                last.bytesCopied());

            SandboxSpec spec = source.spec();
            Image sourceImage = spec.image();
            List<Layer> chain = sourceImage.diffs();
            boolean squash = chain.size() + 1 > squashDepth;
            Path buildFrom = tree;
            List<String> squashedFrom = null;
            if (squash) {
                Path merged = scratch.resolve("merged");
                for (Layer layer : chain) {
                    try (SnapshotEngine.MountedLayerHandle mounted = host.mount(layer)) {
                        LayerMerge.apply(mounted.path(), merged);
                    }
                }
                LayerMerge.apply(tree, merged);
                List<SnapshotEngine.MountedLayerHandle> below = new ArrayList<>();
                try {
                    List<Path> lowers = new ArrayList<>();
                    for (Layer layer : sourceImage.workspace() == null ? List.of(sourceImage.base())
                        : List.of(sourceImage.workspace(), sourceImage.base())) {
                        SnapshotEngine.MountedLayerHandle mounted = host.mount(layer);
                        below.add(mounted);
                        lowers.add(mounted.path());
                    }
                    LayerMerge.pruneWhiteouts(merged, lowers);
                } finally {
                    below.forEach(SnapshotEngine.MountedLayerHandle::close);
                }
                buildFrom = merged;
                squashedFrom = chain.stream().map(Layer::digest).toList();
            }
            // Chunked images keep holes but take several times longer to build: only for trees with sparse files (and
            // squashed ones, whose older diffs' holes a copy out of EROFS cannot see).
            BuiltImage built = host.buildDiffImage(buildFrom, squash || copy.hasSparseFiles());
            LayerStore store = host.store();
            Layer diff;
            try {
                diff = store.put(LayerKind.DIFF, id, "1", built);
            } finally {
                Files.deleteIfExists(built.file()); // moved into the store, or left by a failed put
            }
            Image image = squash ? sourceImage.withDiffs(List.of(diff)) : sourceImage.withDiff(diff);
            long total = System.nanoTime() - start;
            SnapshotRecord record = new SnapshotRecord(SnapshotRecord.FORMAT, id, parentOf(source), Instant.now().toString(),
                source.id(), squash, squashedFrom, SnapshotRecord.ImageJson.of(image), SnapshotRecord.LayerJson.of(diff),
                SnapshotRecord.layerDigests(image), SnapshotRecord.SpecJson.of(spec), Map.copyOf(labels),
                new SnapshotRecord.TimingsJson(pause, total, copy.bytes(), copy.entries(), diff.sizeBytes()));
            try {
                store.putDocument(SnapshotRecord.key(id), record.toJson());
            } catch (RuntimeException e) {
                try {
                    store.deleteReference(LayerKind.DIFF, id, "1");
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            LOG.info("snapshot {} of sandbox {}: paused {} ms, total {} ms, {} bytes in {} entries, diff {} bytes{}", id, source.id(),
                pause / 1_000_000.0, total / 1_000_000.0, copy.bytes(), copy.entries(), diff.sizeBytes(),
                squash ? ", chain of " + (chain.size() + 1) + " squashed into one diff" : "");
            return new SnapshotImpl(record, this);
        } catch (IOException e) {
            throw failed(source, e);
        } catch (SnapshotException e) {
            throw e;
        } catch (RuntimeException e) {
            throw failed(source, e);
        } finally {
            try {
                Trees.deleteTree(scratch);
            } catch (IOException e) {
                LOG.warn("could not remove the snapshot scratch tree {}: {}", scratch, e.toString());
            }
        }
    }

    private static SnapshotException failed(SnapshotEngine.Source source, Exception e) {
        return new SnapshotException("snapshot of sandbox " + source.id() + " failed: " + e.getMessage()
            + "; no snapshot was recorded, and the sandbox goes on running", e);
    }

    /** The snapshot the source was branched from: known for branches made here, else found by its diff chain. */
    private String parentOf(SnapshotEngine.Source source) {
        String known = branchedFrom.get(source.id());
        if (known != null) {
            return known;
        }
        List<Layer> diffs = source.spec().image().diffs();
        if (diffs.isEmpty()) {
            return null;
        }
        return list().stream().filter(s -> s.image().diffs().equals(diffs)).max(Comparator.comparing(Snapshot::createdAt))
            .map(Snapshot::id).orElse(null);
    }

    private String newId() {
        byte[] b = new byte[10];
        random.nextBytes(b);
        return "snap-" + HexFormat.of().formatHex(b);
    }

    // ------------------------------------------------------------------------------------------------------ branch

    @Override
    public List<Sandbox> branch(Snapshot snapshot, int n) {
        if (n <= 0) {
            throw new InvalidSpecException("n", n, "give the number of branches to create, 1 or more");
        }
        SandboxSpec spec = snapshot.spec().image(snapshot.image());
        List<CompletableFuture<Sandbox>> creating = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            creating.add(host.publicHost().createAsync(spec));
        }
        List<Sandbox> made = new ArrayList<>(n);
        Throwable failure = null;
        for (CompletableFuture<Sandbox> f : creating) {
            try {
                made.add(f.join());
            } catch (CompletionException | java.util.concurrent.CancellationException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                if (failure == null) {
                    failure = cause;
                } else {
                    failure.addSuppressed(cause);
                }
            }
        }
        if (failure != null) {
            for (Sandbox sandbox : made) {
                try {
                    sandbox.close();
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
            throw new SnapshotException("branching snapshot " + snapshot.id() + " into " + n + " sandboxes failed: "
                + failure.getMessage() + "; the branches already made were closed", failure);
        }
        for (Sandbox sandbox : made) {
            branchedFrom.put(sandbox.id(), snapshot.id());
        }
        branchedFrom.keySet().removeIf(id -> host.publicHost().sandbox(id).isEmpty());
        return made;
    }

    // --------------------------------------------------------------------------------------------------- snapshots

    @Override
    public Optional<Snapshot> get(String id) {
        if (id == null || !ID.matcher(id).matches()) {
            return Optional.empty();
        }
        return read(SnapshotRecord.key(id)).map(r -> new SnapshotImpl(r, this));
    }

    private Optional<SnapshotRecord> read(String key) {
        Optional<byte[]> json = host.store().getDocument(key);
        if (json.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(SnapshotRecord.parse(json.get()));
        } catch (IOException | RuntimeException e) {
            throw new SnapshotException("the snapshot record " + key + " in the layer store is unreadable: " + e.getMessage(), e);
        }
    }

    @Override
    public List<Snapshot> list() {
        List<Snapshot> all = new ArrayList<>();
        for (String key : host.store().listDocuments(SnapshotRecord.PREFIX)) {
            if (!key.endsWith(".json")) {
                continue;
            }
            try {
                read(key).ifPresent(r -> all.add(new SnapshotImpl(r, this)));
            } catch (SnapshotException e) {
                LOG.warn("skipping {}: {}", key, e.getMessage());
            }
        }
        all.sort(Comparator.comparing(Snapshot::createdAt).thenComparing(Snapshot::id));
        return all;
    }

    @Override
    public void delete(String id, boolean force) {
        Snapshot snapshot = get(id).orElseThrow(() -> new SnapshotException("no snapshot " + id
            + " in this host's layer store: check the id (host.snapshots().list() lists them)"));
        Layer diff = snapshot.diff();
        List<Snapshot> others = list().stream().filter(s -> !s.id().equals(id)).toList();
        if (!force) {
            List<String> running = host.sandboxes().stream().filter(sb -> sb.spec().image().diffs().contains(diff))
                .map(Sandbox::id).sorted().toList();
            List<String> children = others.stream()
                .filter(s -> id.equals(s.parentId().orElse(null)) || s.image().diffs().contains(diff))
                .map(Snapshot::id).sorted().toList();
            if (!running.isEmpty() || !children.isEmpty()) {
                throw new SnapshotException("snapshot " + id + " is in use: "
                    + (running.isEmpty() ? "" : "sandboxes " + running + " run from it")
                    + (!running.isEmpty() && !children.isEmpty() ? ", and " : "")
                    + (children.isEmpty() ? "" : "snapshots " + children + " are built on it")
                    + "; close or delete them first, or delete(id, true) to delete it anyway (running sandboxes keep their mounts)");
            }
        }
        try {
            host.store().deleteDocument(SnapshotRecord.key(id));
            boolean diffStillNamed = others.stream().anyMatch(s -> s.image().layers().stream().anyMatch(l -> l.digest().equals(diff.digest())));
            if (!diffStillNamed) {
                host.store().deleteReference(diff.kind(), diff.name(), diff.version());
            }
        } catch (DsecException e) {
            throw new SnapshotException("deleting snapshot " + id + " failed: " + e.getMessage(), e);
        }
        LOG.info("deleted snapshot {}{}", id, force ? " (forced)" : "");
    }
}
