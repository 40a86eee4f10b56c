package io.dsec.image.internal.gc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dsec.DsecException;
import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.StoreGc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;

/**
 * The lease a GC run holds in {@link StoreGc#LOCK_KEY}, so that two runs do not sweep one store at once (a run that
 * wrote its candidates from a stale view could otherwise give a fresh upload an old first-seen time). Best effort: a
 * store has no compare-and-set, so the lease is written, read back, and checked again before each batch of deletions;
 * two runs that start within the same instant may both get it and one of them stops at its next check.
 */
final class GcLock {
    /** How long a lease lasts unless renewed; a run renews it before each batch of deletions. */
    static final Duration LEASE = Duration.ofMinutes(15);
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final BlobStore store;
    private final Clock clock;
    private final String owner = UUID.randomUUID().toString();
    private final String host = hostName();
    private final Instant acquiredAt;

    private GcLock(BlobStore store, Clock clock) {
        this.store = store;
        this.clock = clock;
        this.acquiredAt = clock.instant();
    }

    /** Takes the lease, or throws naming the run that holds it. */
    static GcLock acquire(BlobStore store, Clock clock) {
        GcLock lock = new GcLock(store, clock);
        Held held = read(store);
        Instant now = clock.instant();
        if (held != null && held.expiresAt.isAfter(now)) {
            throw new DsecException("store GC of " + store.describe() + " did not start: another run (host " + held.host
                + ", started " + held.acquiredAt + ") holds " + StoreGc.LOCK_KEY + " until " + held.expiresAt
                + "; run one GC per store at a time: wait for it, or delete " + StoreGc.LOCK_KEY
                + " from the store if that run died");
        }
        lock.write();
        lock.check("start");
        return lock;
    }

    /** Checks the lease is still ours and extends it; throws when another run took it. */
    void renew(String stage) {
        check(stage);
        write();
    }

    /** Gives the lease up if it is still ours; never throws. */
    void release() {
        try {
            Held held = read(store);
            if (held != null && owner.equals(held.owner)) {
                store.delete(StoreGc.LOCK_KEY);
            }
        } catch (RuntimeException e) {
            // it expires on its own
        }
    }

    private void check(String stage) {
        Held held = read(store);
        if (held == null || !owner.equals(held.owner)) {
            throw new DsecException("store GC of " + store.describe() + " stopped at " + stage + ": its lease "
                + StoreGc.LOCK_KEY + " is " + (held == null ? "gone" : "held by another run (host " + held.host + ")")
                + "; run one GC per store at a time, and run it again");
        }
    }

    private void write() {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("owner", owner);
        n.put("host", host);
        n.put("acquiredAt", acquiredAt.toString());
        n.put("expiresAt", clock.instant().plus(LEASE).toString());
        try {
            store.put(StoreGc.LOCK_KEY, MAPPER.writeValueAsBytes(n));
        } catch (IOException e) {
            throw new DsecException("cannot write " + StoreGc.LOCK_KEY + ": " + e, e);
        }
    }

    private record Held(String owner, String host, Instant acquiredAt, Instant expiresAt) {
    }

    private static Held read(BlobStore store) {
        byte[] bytes;
        try {
            bytes = store.get(StoreGc.LOCK_KEY);
        } catch (BlobNotFoundException e) {
            return null;
        }
        try {
            JsonNode n = MAPPER.readTree(bytes);
            return new Held(n.get("owner").textValue(), n.path("host").asText("?"), Instant.parse(n.get("acquiredAt").textValue()),
                Instant.parse(n.get("expiresAt").textValue()));
        } catch (IOException | RuntimeException e) {
            throw new ImageFetchException("store GC of " + store.describe() + " stopped before deleting more: its lease " + StoreGc.LOCK_KEY
                + " is damaged (" + e.getMessage() + "); make sure no other GC runs on this store, delete it and run again", e);
        }
    }

    private static String hostName() {
        String h = System.getenv("HOSTNAME");
        if (h != null && !h.isBlank()) {
            return h.strip();
        }
        try {
            return Files.readString(Path.of("/etc/hostname")).strip();
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }
}
