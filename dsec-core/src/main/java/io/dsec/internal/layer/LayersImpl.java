package io.dsec.internal.layer;

import io.dsec.InvalidSpecException;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Layers;
import io.dsec.spi.LayerStore;
import io.dsec.spi.LayerStore.BuiltImage;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** {@link Layers} over a {@link LayerStore}, building with an {@link ErofsImageBuilder}. */
public final class LayersImpl implements Layers {
    private final LayerStore store;
    private final ErofsImageBuilder builder;

    public LayersImpl(LayerStore store, ErofsImageBuilder builder) {
        this.store = Objects.requireNonNull(store, "store");
        this.builder = Objects.requireNonNull(builder, "builder");
    }

    /** A store under {@code <stateDir>/layers} and {@code mkfs.erofs} from PATH. */
    public static LayersImpl local(Path stateDir) {
        return new LayersImpl(new LocalLayerStore(stateDir), new ErofsImageBuilder());
    }

    public LayerStore store() {
        return store;
    }

    @Override
    public Layer fromDirectory(LayerKind kind, String reference, Path directory) {
        checkKind(kind);
        String[] ref = Layer.parseReference(reference);
        return store(kind, ref, builder.fromDirectory(directory, store.stagingDirectory()));
    }

    @Override
    public Layer fromTar(LayerKind kind, String reference, InputStream tar) {
        checkKind(kind);
        String[] ref = Layer.parseReference(reference);
        if (tar == null) {
            throw new InvalidSpecException("tar", null, "give a plain (uncompressed) tar stream");
        }
        return store(kind, ref, builder.fromTar(tar, store.stagingDirectory()));
    }

    private Layer store(LayerKind kind, String[] ref, BuiltImage image) {
        if (store.contains(image.digest())) {
            // Built before: keep the stored blob, drop the new file, and only point the reference at it.
            ErofsImageBuilder.deleteQuietly(image.file());
        }
        // put records the reference; it moves the file only when it still exists and the blob does not.
        return store.put(kind, ref[0], ref[1], image);
    }

    @Override
    public Optional<Layer> get(String digest) {
        return store.get(digest);
    }

    @Override
    public Optional<Layer> find(LayerKind kind, String reference) {
        checkKind(kind);
        String[] ref = Layer.parseReference(reference);
        return store.find(kind, ref[0], ref[1]);
    }

    @Override
    public List<Layer> list() {
        return store.list();
    }

    private static void checkKind(LayerKind kind) {
        if (kind == null) {
            throw new InvalidSpecException("layer.kind", null, "give LayerKind.BASE, WORKSPACE or TOOLKIT");
        }
    }
}
