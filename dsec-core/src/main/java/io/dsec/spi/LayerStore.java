package io.dsec.spi;

import io.dsec.Layer;
import io.dsec.LayerKind;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Where a host keeps its layer images: content-addressed blobs (one per digest) and references
 * ({@code kind/name:version} to the digest last put under it).
 *
 * <p>The store says nothing about where the bytes live. The local store keeps them in files; a later store keeps
 * them in chunks on S3 or NFS and fetches them on demand through FUSE. Either way the kernel mounts a local file,
 * {@link #mountSource(Layer)}. Implementations are safe for concurrent use, also by several threads putting the same
 * content at once.
 */
public interface LayerStore extends AutoCloseable {

    /** Opens a store for a host, given the host's state directory (for caches, mounts and indexes of its own). */
    @FunctionalInterface
    interface Factory {
        LayerStore open(Path stateDir);
    }

    /**
     * A finished image file, not yet in the store.
     *
     * @param file      a local file, in {@link #stagingDirectory()}; {@link #put} takes it over
     * @param digest    {@code sha256:<hex>} of its bytes
     * @param sizeBytes its size, a multiple of 2 MiB
     */
    record BuiltImage(Path file, String digest, long sizeBytes) {
        public BuiltImage {
            Objects.requireNonNull(file, "file");
            Objects.requireNonNull(digest, "digest");
        }
    }

    /**
     * A local directory where builders write images (and scratch trees) before {@link #put}. For a local store it is on
     * the same filesystem as the blobs, so that {@code put} is a rename.
     */
    Path stagingDirectory();

    /**
     * Stores {@code image} under {@code kind/name:version} and returns the layer. Takes over the file: it is moved into
     * the store, or deleted when the store has these bytes already (identical content is stored once). The reference
     * then points to this digest, also when it pointed to another before.
     */
    Layer put(LayerKind kind, String name, String version, BuiltImage image);

    /** True when the store has the bytes of {@code digest}. */
    boolean contains(String digest);

    /** The layer of a stored digest, with the kind, name and version it was last put under. */
    Optional<Layer> get(String digest);

    /** The layer that {@code kind/name:version} points to: the one put last. */
    Optional<Layer> find(LayerKind kind, String name, String version);

    /** Every reference with the layer it points to, ordered by kind, name and version. */
    List<Layer> list();

    /**
     * The local file the kernel mounts for {@code layer} (an EROFS image). For an on-demand store this is a file on a
     * FUSE mount whose reads fetch chunks as they are needed.
     *
     * @throws io.dsec.DsecException when the store does not have the layer
     */
    Path mountSource(Layer layer);

    /**
     * Stores a small document (a snapshot record, for one) under {@code key}, replacing what was there, atomically:
     * readers see the old bytes or the new ones, never part of them. Keys are 1-512 characters of {@code [a-z0-9._/-]},
     * not starting with '/', without "..": {@code snapshots/<id>.json}. Documents live beside the layers, so every host
     * using the same store sees them.
     *
     * @throws io.dsec.DsecException when the store cannot keep documents or the write fails
     */
    default void putDocument(String key, byte[] content) {
        throw new io.dsec.DsecException("the layer store " + getClass().getName() + " cannot keep documents (snapshot records)");
    }

    /** The document under {@code key}, or empty when there is none. */
    default Optional<byte[]> getDocument(String key) {
        return Optional.empty();
    }

    /** The keys of the documents that start with {@code prefix}, sorted. */
    default List<String> listDocuments(String prefix) {
        return List.of();
    }

    /** Removes a document; nothing happens when it is absent. */
    default void deleteDocument(String key) {
    }

    /**
     * Removes the reference {@code kind/name:version} (not the bytes: a garbage collector removes blobs no reference or
     * snapshot record names). Nothing happens when it is absent.
     */
    default void deleteReference(LayerKind kind, String name, String version) {
    }

    /** Checks a document key: 1-512 characters of {@code [a-z0-9._/-]}, not starting with '/', without "..". */
    static String checkDocumentKey(String key) {
        if (key == null || key.isEmpty() || key.length() > 512 || !key.matches("[a-z0-9._/-]+") || key.startsWith("/")
            || key.contains("..") || key.endsWith("/")) {
            throw new io.dsec.InvalidSpecException("document key", key,
                "use 1-512 characters of a-z, 0-9, '.', '_', '/' or '-', not starting or ending with '/', without '..'");
        }
        return key;
    }

    /**
     * Called by the host's layer mounts when the kernel no longer mounts {@code layer}: an on-demand store may stop
     * serving it. The local store has nothing to do.
     */
    default void released(Layer layer) {
    }

    /** Releases what the store holds (threads, FUSE mounts, open files). The host calls it last, on close. */
    @Override
    default void close() {
    }
}
