package io.dsec;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Builds and finds layers on a host. Building is deterministic: the same tree (contents, owners, modes, xattrs and
 * mtimes, which layers keep) gives the same digest, and a layer that exists already is not built again.
 */
public interface Layers {
    /**
     * Builds a layer from a directory tree.
     *
     * @param reference {@code name} or {@code name:version}
     */
    Layer fromDirectory(LayerKind kind, String reference, Path directory);

    /**
     * Builds a layer from a tar stream (plain, not compressed). The stream is read to its end, not closed. A tar keeps
     * mtimes in whole seconds, so it gives the digest of its directory when that directory's mtimes are whole seconds.
     */
    Layer fromTar(LayerKind kind, String reference, InputStream tar);

    /** A layer this host has, by digest ({@code sha256:...}). */
    Optional<Layer> get(String digest);

    /** The newest layer of this kind with this {@code name:version}. */
    Optional<Layer> find(LayerKind kind, String reference);

    List<Layer> list();
}
