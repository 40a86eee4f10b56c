package io.dsec.image;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.ImageFetchException;
import io.dsec.LayerKind;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

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
    /** The smallest chunk size a manifest may have: 64 KiB. */
    public static final int MIN_CHUNK_SIZE = 64 * 1024;
    /** The largest chunk size a manifest may have: 2 MiB. */
    public static final int MAX_CHUNK_SIZE = 2 * 1024 * 1024;

    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonFactory JSON = MAPPER.getFactory();

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

    /**
     * The manifest as compact JSON (UTF-8), fields in a fixed order, so equal manifests give equal bytes:
     * {@code {"schemaVersion":1,"digest":"sha256:…","kind":"base","name":…,"version":…,"sizeBytes":…,
     * "chunkSize":…,"chunks":["<hex>",…]}}.
     */
    public byte[] toJson() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128 + chunks.size() * 67);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("schemaVersion", schemaVersion);
            g.writeStringField("digest", digest);
            g.writeStringField("kind", kind.name().toLowerCase(Locale.ROOT));
            g.writeStringField("name", name);
            g.writeStringField("version", version);
            g.writeNumberField("sizeBytes", sizeBytes);
            g.writeNumberField("chunkSize", chunkSize);
            g.writeArrayFieldStart("chunks");
            for (String chunk : chunks) {
                g.writeString(chunk);
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /**
     * Reads and checks a manifest written by {@link #toJson()}. Unknown fields are ignored.
     *
     * @param json   the manifest bytes
     * @param source where they came from, for messages: {@code layers/sha256/ab….json in s3 http://…/bucket}
     * @throws InvalidManifestException naming the field that is wrong and {@code source}
     */
    public static LayerManifest parse(byte[] json, String source) {
        Objects.requireNonNull(json, "json");
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InvalidManifestException(source, "json", "is not valid JSON (" + e.getOriginalMessage() + ")", e);
        } catch (IOException e) {
            throw new InvalidManifestException(source, "json", "cannot be read (" + e.getMessage() + ")", e);
        }
        if (root == null || !root.isObject()) {
            throw new InvalidManifestException(source, "json", "is not a JSON object", null);
        }
        JsonNode v = field(root, "schemaVersion", source);
        if (!v.canConvertToInt() || !v.isIntegralNumber() || v.intValue() != SCHEMA_VERSION) {
            throw new InvalidManifestException(source, "schemaVersion", "schemaVersion " + v + " is not supported (this dsec reads "
                + SCHEMA_VERSION + ")", null);
        }
        String digest = text(root, "digest", source);
        if (!DIGEST.matcher(digest).matches()) {
            throw new InvalidManifestException(source, "digest", "digest " + quote(digest) + " is not sha256:<64 lowercase hex>", null);
        }
        String kindText = text(root, "kind", source);
        LayerKind kind;
        try {
            kind = LayerKind.valueOf(kindText.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new InvalidManifestException(source, "kind", "kind " + quote(kindText) + " is not one of base, workspace, toolkit", null);
        }
        String name = text(root, "name", source);
        String version = text(root, "version", source);
        JsonNode size = field(root, "sizeBytes", source);
        if (!size.isIntegralNumber() || !size.canConvertToLong() || size.longValue() < 0) {
            throw new InvalidManifestException(source, "sizeBytes", "sizeBytes " + size + " is not a non-negative integer", null);
        }
        long sizeBytes = size.longValue();
        JsonNode cs = field(root, "chunkSize", source);
        if (!cs.isIntegralNumber() || !cs.canConvertToInt()) {
            throw new InvalidManifestException(source, "chunkSize", "chunkSize " + cs + " is not an integer", null);
        }
        int chunkSize = cs.intValue();
        if (chunkSize <= 0 || Integer.bitCount(chunkSize) != 1) {
            throw new InvalidManifestException(source, "chunkSize", "chunkSize " + chunkSize + " is not a power of two", null);
        }
        if (chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
            throw new InvalidManifestException(source, "chunkSize", "chunkSize " + chunkSize + " is outside " + MIN_CHUNK_SIZE
                + ".." + MAX_CHUNK_SIZE, null);
        }
        JsonNode array = field(root, "chunks", source);
        if (!array.isArray()) {
            throw new InvalidManifestException(source, "chunks", "chunks is not an array", null);
        }
        List<String> chunks = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            JsonNode c = array.get(i);
            if (!c.isTextual() || !HEX.matcher(c.textValue()).matches()) {
                throw new InvalidManifestException(source, "chunks", "chunks[" + i + "] " + c + " is not 64 lowercase hex characters", null);
            }
            chunks.add(c.textValue());
        }
        long expected = expectedChunkCount(sizeBytes, chunkSize);
        if (chunks.size() != expected) {
            throw new InvalidManifestException(source, "chunks", "chunks has " + chunks.size() + " entries but sizeBytes " + sizeBytes
                + " in chunks of " + chunkSize + " needs " + expected, null);
        }
        return new LayerManifest(SCHEMA_VERSION, digest, kind, name, version, sizeBytes, chunkSize, chunks);
    }

    /** How many chunks an image of {@code sizeBytes} has when cut into {@code chunkSize} pieces. */
    public static long expectedChunkCount(long sizeBytes, int chunkSize) {
        return (sizeBytes + chunkSize - 1) / chunkSize;
    }

    private static JsonNode field(JsonNode root, String field, String source) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            throw new InvalidManifestException(source, field, field + " is missing", null);
        }
        return n;
    }

    private static String text(JsonNode root, String field, String source) {
        JsonNode n = field(root, field, source);
        if (!n.isTextual()) {
            throw new InvalidManifestException(source, field, field + " " + n + " is not a string", null);
        }
        return n.textValue();
    }

    private static String quote(String s) {
        return '"' + (s.length() > 80 ? s.substring(0, 80) + "…" : s) + '"';
    }

    /** A stored manifest that cannot be used; the message names the field, what is wrong, and where it came from. */
    public static final class InvalidManifestException extends ImageFetchException {
        private static final long serialVersionUID = 1L;
        private final String field;

        public InvalidManifestException(String source, String field, String problem, Throwable cause) {
            super("manifest " + source + ": " + problem + "; it is damaged or was written by another version of dsec: push the layer again with this one", cause);
            this.field = field;
        }

        /** The field that is wrong ({@code json} when the document itself is). */
        public String field() {
            return field;
        }
    }
}
