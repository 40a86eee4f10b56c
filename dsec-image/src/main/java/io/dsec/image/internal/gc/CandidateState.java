package io.dsec.image.internal.gc;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.StoreGc;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@link StoreGc#CANDIDATES_KEY} holds: the blobs the last run found unreferenced and when a run first saw each.
 * {@code {"schemaVersion":1,"runAt":"<instant>","candidates":{"<key>":"<first seen>",…}}}.
 *
 * @param runAt      when the run that wrote it ran; null when there was none
 * @param candidates key to the time it was first seen unreferenced
 */
record CandidateState(Instant runAt, Map<String, Instant> candidates) {
    static final int SCHEMA_VERSION = 1;
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonFactory JSON = MAPPER.getFactory();

    static final CandidateState NONE = new CandidateState(null, Map.of());

    CandidateState {
        candidates = Collections.unmodifiableMap(new TreeMap<>(candidates));
    }

    /**
     * Reads the state; a missing one is {@link #NONE}. A damaged one is also {@link #NONE} (every candidate's grace
     * starts again, which only delays deletion) and adds a line to {@code errors}.
     */
    static CandidateState read(BlobStore store, List<String> errors) {
        byte[] bytes;
        try {
            bytes = store.get(StoreGc.CANDIDATES_KEY);
        } catch (BlobNotFoundException e) {
            return NONE;
        }
        try {
            return parse(bytes);
        } catch (IOException | RuntimeException e) {
            errors.add(StoreGc.CANDIDATES_KEY + " in " + store.describe() + " is damaged (" + e.getMessage()
                + "); ignored it: the grace of every candidate starts again with this run");
            return NONE;
        }
    }

    static CandidateState parse(byte[] bytes) throws IOException {
        JsonNode root = MAPPER.readTree(bytes);
        if (root == null || !root.isObject()) {
            throw new IOException("not a JSON object");
        }
        if (root.path("schemaVersion").asInt(-1) != SCHEMA_VERSION) {
            throw new IOException("schemaVersion " + root.get("schemaVersion") + " is not " + SCHEMA_VERSION);
        }
        Instant runAt = Instant.parse(root.get("runAt").textValue());
        JsonNode c = root.get("candidates");
        if (c == null || !c.isObject()) {
            throw new IOException("candidates is not an object");
        }
        Map<String, Instant> candidates = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            candidates.put(e.getKey(), Instant.parse(e.getValue().textValue()));
        }
        return new CandidateState(runAt, candidates);
    }

    byte[] toJson() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64 + candidates.size() * 110);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("schemaVersion", SCHEMA_VERSION);
            g.writeStringField("runAt", runAt.toString());
            g.writeObjectFieldStart("candidates");
            for (Map.Entry<String, Instant> e : candidates.entrySet()) {
                g.writeStringField(e.getKey(), e.getValue().toString());
            }
            g.writeEndObject();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
