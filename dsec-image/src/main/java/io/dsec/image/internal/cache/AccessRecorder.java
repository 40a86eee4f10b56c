package io.dsec.image.internal.cache;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Records the order in which a layer's chunks are first read, from its creation until {@code window} has passed
 * on {@code clock} (or {@link #stop()}). Meant for the first sandboxes of an image: hand it to
 * {@link OnDemandLayerReader#record}, and when done store {@link #toTrace()} under its key. After the window a read
 * costs one volatile check.
 */
public final class AccessRecorder {
    private final String digest;
    private final Clock clock;
    private final Instant until;
    private volatile boolean recording = true;
    // Guarded by this.
    private final BitSet seen = new BitSet();
    private final List<Integer> order = new ArrayList<>();

    public AccessRecorder(String digest, Duration window, Clock clock) {
        this.digest = digest;
        this.clock = clock;
        this.until = clock.instant().plus(window);
    }

    public String digest() {
        return digest;
    }

    /** A read touched chunk {@code index}. */
    public void onRead(int index) {
        if (!recording) {
            return;
        }
        synchronized (this) {
            if (!clock.instant().isBefore(until)) {
                recording = false;
                return;
            }
            if (!seen.get(index)) {
                seen.set(index);
                order.add(index);
            }
        }
    }

    /** Whether reads are still being recorded (false once the window has passed, checked at the next read). */
    public boolean recording() {
        if (recording && !clock.instant().isBefore(until)) {
            recording = false;
        }
        return recording;
    }

    public void stop() {
        recording = false;
    }

    /** Chunk indexes in first-read order. */
    public synchronized List<Integer> trace() {
        return List.copyOf(order);
    }

    public AccessTrace toTrace() {
        return new AccessTrace(digest, trace());
    }
}
