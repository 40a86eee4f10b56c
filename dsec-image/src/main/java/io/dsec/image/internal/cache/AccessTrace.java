package io.dsec.image.internal.cache;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.ImageFetchException;
import io.dsec.image.LayerManifest;
import java.io.IOException;
import java.util.List;
import java.util.Objects;

/**
 * The order in which a layer's chunks were first read by early sandboxes of an image, for {@link Prefetcher}. Stored
 * as JSON, {@code {"digest":"sha256:…","chunks":[0,17,3,…]}}, under {@link LayerManifest#traceKey(String)}.
 *
 * @param digest the layer
 * @param chunks chunk indexes, each once, in first-read order
 */
public record AccessTrace(String digest, List<Integer> chunks) {
    private static final ObjectMapper JSON = new ObjectMapper()
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    public AccessTrace {
        Objects.requireNonNull(digest, "digest");
        chunks = List.copyOf(chunks);
    }

    /** The store key to keep it under. */
    public String key() {
        return LayerManifest.traceKey(digest);
    }

    public byte[] toJson() {
        try {
            return JSON.writeValueAsBytes(this);
        } catch (IOException e) {
            throw new IllegalStateException("cannot serialize trace of " + digest, e);
        }
    }

    public static AccessTrace fromJson(byte[] json) {
        try {
            AccessTrace t = JSON.readValue(json, AccessTrace.class);
            if (t == null || t.digest() == null) {
                throw new ImageFetchException("access trace has no digest");
            }
            return t;
        } catch (IOException | NullPointerException e) {
            throw new ImageFetchException("access trace is not valid JSON of {\"digest\":…,\"chunks\":[…]}: "
                + e.getMessage(), e);
        }
    }
}
