package io.dsec.image.internal.gc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.DsecException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.LayerManifest;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads what marking needs from a store: the roots and the manifests. Manifests are cached across reads by key. */
final class StoreReader {
    static final String REFS = "refs/";
    static final String SNAPSHOTS = "snapshots/";
    static final String LAYERS = "layers/sha256/";
    static final String CHUNKS = "chunks/sha256/";
    static final String TRACES = "traces/sha256/";
    static final Pattern DIGEST = Pattern.compile("sha256:([0-9a-f]{64})");
    static final Pattern MANIFEST_KEY = Pattern.compile("layers/sha256/([0-9a-f]{64})\\.json");
    static final Pattern CHUNK_KEY = Pattern.compile("chunks/sha256/([0-9a-f]{64})");
    static final Pattern TRACE_KEY = Pattern.compile("traces/sha256/([0-9a-f]{64})\\.json");
    /** Snapshot records; {@code snapshots/<id>.json}, but any depth, so that no record is missed. */
    static final Pattern SNAPSHOT_KEY = Pattern.compile("snapshots/.+\\.json");
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** A root or manifest that cannot be read: whatever it protects is unknown, so the run must not delete. */
    static final class Damaged extends DsecException {
        private static final long serialVersionUID = 1L;

        Damaged(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * The roots at one moment.
     *
     * @param hexes     hex of each root digest to the first key that names it
     * @param refs      references read
     * @param snapshots snapshot records read
     */
    record Roots(Map<String, String> hexes, int refs, int snapshots) {
        boolean contains(String hex) {
            return hexes.containsKey(hex);
        }
    }

    /** A parsed manifest and the size of its JSON. */
    record Manifest(String key, String hex, LayerManifest manifest, byte[] json) {
    }

    private final BlobStore store;
    private final Map<String, Manifest> cache = new HashMap<>();
    private Map<String, Manifest> listed = Map.of();

    StoreReader(BlobStore store) {
        this.store = store;
    }

    Roots readRoots() {
        Map<String, String> hexes = new LinkedHashMap<>();
        int refs = 0;
        for (String key : store.list(REFS)) {
            byte[] json = getOrNull(key);
            if (json == null) {
                continue; // deleted since the listing: no longer a root
            }
            refs++;
            JsonNode n = readJson(json, key, "reference");
            JsonNode d = n.get("digest");
            String hex = d == null || !d.isTextual() ? null : hexOf(d.textValue());
            if (hex == null) {
                throw new Damaged("reference " + key + " in " + store.describe() + " has no valid \"digest\" (sha256:<64 hex>), "
                    + "found " + d + "; push that layer again (which rewrites the reference) or delete the reference if the "
                    + "layer is not needed", null);
            }
            hexes.putIfAbsent(hex, key);
        }
        int snapshots = 0;
        for (String key : store.list(SNAPSHOTS)) {
            if (!SNAPSHOT_KEY.matcher(key).matches()) {
                continue;
            }
            byte[] json = getOrNull(key);
            if (json == null) {
                continue;
            }
            snapshots++;
            JsonNode n = readJson(json, key, "snapshot record");
            JsonNode layers = n.get("layers");
            if (layers == null || !layers.isArray()) {
                throw new Damaged("snapshot record " + key + " in " + store.describe() + " has no \"layers\" array; repair or "
                    + "delete that snapshot (deleting it releases its layers)", null);
            }
            for (int i = 0; i < layers.size(); i++) {
                JsonNode l = layers.get(i);
                String hex = l.isTextual() ? hexOf(l.textValue()) : null;
                if (hex == null) {
                    throw new Damaged("snapshot record " + key + " in " + store.describe() + ": layers[" + i + "] " + l
                        + " is not a digest sha256:<64 lowercase hex>; repair or delete that snapshot", null);
                }
                hexes.putIfAbsent(hex, key);
            }
            // Belt and braces: a layer the record names elsewhere (image.base.digest, diff.digest) is kept too.
            for (JsonNode d : n.findValues("digest")) {
                String hex = d.isTextual() ? hexOf(d.textValue()) : null;
                if (hex != null) {
                    hexes.putIfAbsent(hex, key);
                }
            }
        }
        return new Roots(hexes, refs, snapshots);
    }

    /** Lists the manifests and parses those not read before; the result is what the store has now, by hex. */
    Map<String, Manifest> refreshManifests() {
        Map<String, Manifest> now = new TreeMap<>();
        for (String key : store.list(LAYERS)) {
            Matcher m = MANIFEST_KEY.matcher(key);
            if (!m.matches()) {
                continue;
            }
            Manifest manifest = cache.get(key);
            if (manifest == null) {
                byte[] json = getOrNull(key);
                if (json == null) {
                    continue;
                }
                manifest = parse(key, m.group(1), json);
                cache.put(key, manifest);
            }
            now.put(manifest.hex(), manifest);
        }
        listed = now;
        return now;
    }

    /** The manifests of the last {@link #refreshManifests()}. */
    Map<String, Manifest> manifests() {
        return listed;
    }

    /** Forgets a manifest, so that one written again under its key is read again. */
    void forget(String key) {
        cache.remove(key);
    }

    /** The hex of every key under {@code prefix} matching {@code pattern}, sorted. */
    List<String> listHexes(String prefix, Pattern pattern) {
        return store.list(prefix).stream().map(pattern::matcher).filter(Matcher::matches).map(m -> m.group(1)).sorted().toList();
    }

    private Manifest parse(String key, String hex, byte[] json) {
        String source = key + " in " + store.describe();
        LayerManifest manifest;
        try {
            manifest = LayerManifest.parse(json, source);
        } catch (LayerManifest.InvalidManifestException e) {
            throw new Damaged(e.getMessage() + " (or delete it if no reference or snapshot needs that layer)", e);
        }
        if (!manifest.digest().equals("sha256:" + hex)) {
            throw new Damaged("manifest " + source + " describes " + manifest.digest() + ", not the layer its key names; "
                + "push that layer again, or delete the manifest if no reference or snapshot needs it", null);
        }
        return new Manifest(key, hex, manifest, json);
    }

    private JsonNode readJson(byte[] json, String key, String what) {
        try {
            JsonNode n = MAPPER.readTree(json);
            if (n == null || !n.isObject()) {
                throw new IOException("not a JSON object");
            }
            return n;
        } catch (IOException e) {
            throw new Damaged(what + " " + key + " in " + store.describe() + " is not valid JSON (" + e.getMessage()
                + "); repair or delete it", e);
        }
    }

    private byte[] getOrNull(String key) {
        try {
            return store.get(key);
        } catch (BlobNotFoundException e) {
            return null;
        }
    }

    static String hexOf(String digest) {
        Matcher m = DIGEST.matcher(digest);
        return m.matches() ? m.group(1) : null;
    }
}
