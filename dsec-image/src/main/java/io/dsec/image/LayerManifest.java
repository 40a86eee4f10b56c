package io.dsec.image;

import io.dsec.LayerKind;
import java.util.List;
import java.util.Objects;

/**
 * What a store knows of one layer: its metadata and the chunks its EROFS image is cut into, in order. Stored as
 * JSON under {@link #manifestKey(String)}; each chunk is a blob under {@link #chunkKey(String)} named by the sha256
 * of its bytes, so identical chunks are stored once across all layers.
 *
 * @param schemaVersion format version, 1
 * @param digest        {@code sha256:<hex>} of the whole image
 * @param kind          base, workspace or toolkit
 * @param name          human name
 * @param version       human version
 * @param sizeBytes     image size (a multiple of 2 MiB)
 * @param chunkSize     bytes per chunk (a power of two); the last chunk may be shorter
 * @param chunks        sha256 hex digests of the chunks, in order
 */
public record LayerManifest(int schemaVersion, String digest, LayerKind kind, String name, String version, long sizeBytes,
                            int chunkSize, List<String> chunks) {
    public static final int SCHEMA_VERSION = 1;

    public LayerManifest {
        Objects.requireNonNull(digest, "digest");
        Objects.requireNonNull(kind, "kind");
        chunks = List.copyOf(chunks);
    }

    public static String manifestKey(String digest) {
        return "layers/sha256/" + hex(digest) + ".json";
    }

    public static String traceKey(String digest) {
        return "traces/sha256/" + hex(digest) + ".json";
    }

    public static String chunkKey(String chunkHex) {
        return "chunks/sha256/" + chunkHex;
    }

    public static String refKey(LayerKind kind, String name, String version) {
        return "refs/" + kind.name().toLowerCase(java.util.Locale.ROOT) + "/" + name + "/" + version + ".json";
    }

    public int chunkCount() {
        return chunks.size();
    }

    public long chunkOffset(int index) {
        return (long) index * chunkSize;
    }

    public int chunkLength(int index) {
        return (int) Math.min(chunkSize, sizeBytes - chunkOffset(index));
    }

    private static String hex(String digest) {
        return digest.startsWith("sha256:") ? digest.substring(7) : digest;
    }
}
