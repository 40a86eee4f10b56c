package io.dsec.image;

import java.util.List;

/**
 * Shared storage for layer data: a flat space of immutable blobs under keys such as
 * {@code chunks/sha256/<hex>} or {@code layers/sha256/<hex>.json}. Implementations: a POSIX directory (the embedded
 * default, and how a host uses a 3FS, NFS or CephFS mount), any S3-compatible endpoint, and read-only HTTP.
 *
 * <p>Keys are 1-512 characters of {@code [a-z0-9._/-]}, not starting with '/' and without "..". Blobs are immutable:
 * writing an existing key again must write the same bytes, and concurrent writers of one key are safe. All methods
 * are safe for concurrent use. Failures are {@link io.dsec.ImageFetchException}s naming the store and the key;
 * a missing blob is a {@link BlobNotFoundException}.
 */
public interface BlobStore extends AutoCloseable {
    /** The whole blob. */
    byte[] get(String key);

    /** Up to {@code length} bytes from {@code offset}; fewer only at the end of the blob. */
    byte[] getRange(String key, long offset, int length);

    boolean exists(String key);

    /** Stores a blob atomically: readers see all of it or nothing. */
    void put(String key, byte[] data);

    /** Every key that starts with {@code prefix}, sorted. */
    List<String> list(String prefix);

    /** Removes a blob; no error when it is absent. */
    void delete(String key);

    /** False for stores that cannot be written (HTTP). */
    boolean writable();

    /** Where the store is, for messages: {@code directory /mnt/3fs/dsec}, {@code s3 http://127.0.0.1:9000/bucket}. */
    String describe();

    @Override
    default void close() {
    }
}
