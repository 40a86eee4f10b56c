package io.dsec.internal.layer;

import io.dsec.Layer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One use of a read-only mounted layer, from {@link LayerMounts#acquire(Layer)}. Closing it releases the use (once;
 * closing again does nothing); the last release unmounts the layer.
 */
public final class MountedLayer implements AutoCloseable {
    private final LayerMounts owner;
    private final LayerMounts.Entry entry;
    private final AtomicBoolean released = new AtomicBoolean();

    MountedLayer(LayerMounts owner, LayerMounts.Entry entry) {
        this.owner = owner;
        this.entry = entry;
    }

    /** The layer. */
    public Layer layer() {
        return entry.layer;
    }

    /** Where the layer is mounted, read-only: {@code <stateDir>/mounts/<hex>}. */
    public Path path() {
        return entry.path;
    }

    /** True until this use is released. */
    public boolean isOpen() {
        return !released.get();
    }

    @Override
    public void close() {
        if (released.compareAndSet(false, true)) {
            owner.release(entry);
        }
    }

    @Override
    public String toString() {
        return "MountedLayer[" + entry.layer.reference() + " at " + entry.path + (isOpen() ? "" : ", released") + "]";
    }
}
