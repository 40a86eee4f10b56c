package io.dsec.image.internal.cache;

import java.io.IOException;

/**
 * The chunk cache could not store or serve a chunk: no room within its budget or on its filesystem, or it is closed.
 * Nothing half-written is left behind when it is thrown.
 */
public final class ChunkCacheException extends IOException {
    private static final long serialVersionUID = 1L;

    public ChunkCacheException(String message) {
        super(message);
    }

    public ChunkCacheException(String message, Throwable cause) {
        super(message, cause);
    }
}
