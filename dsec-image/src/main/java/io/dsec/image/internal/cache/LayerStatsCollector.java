package io.dsec.image.internal.cache;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/** The mutable counters behind {@link LayerFetchStats}, for one layer; safe for concurrent use. */
public final class LayerStatsCollector {
    private final String digest;
    private final long imageBytes;
    private final LongAdder bytesFetched = new LongAdder();
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder fetches = new LongAdder();
    private final LongAdder verificationFailures = new LongAdder();
    private final LongAdder failedReads = new LongAdder();
    private final LongAdder prefetched = new LongAdder();
    private final LongAdder latencySumMicros = new LongAdder();
    private final AtomicLongArray latencyBuckets = new AtomicLongArray(256);

    public LayerStatsCollector(String digest, long imageBytes) {
        this.digest = digest;
        this.imageBytes = imageBytes;
    }

    public String digest() {
        return digest;
    }

    void hit() {
        hits.increment();
    }

    void miss() {
        misses.increment();
    }

    void failedRead() {
        failedReads.increment();
    }

    void prefetched() {
        prefetched.increment();
    }

    /** One store get that returned {@code bytes} bytes after {@code nanos}. */
    void fetched(long bytes, long nanos) {
        fetches.increment();
        bytesFetched.add(bytes);
        long micros = Math.max(0, nanos / 1000);
        latencySumMicros.add(micros);
        latencyBuckets.incrementAndGet(bucket(micros));
    }

    /** One store get that failed outright (no bytes). */
    void fetchFailed() {
        fetches.increment();
    }

    void verificationFailure() {
        verificationFailures.increment();
    }

    public LayerFetchStats snapshot() {
        long[] counts = new long[latencyBuckets.length()];
        long total = 0;
        for (int i = 0; i < counts.length; i++) {
            counts[i] = latencyBuckets.get(i);
            total += counts[i];
        }
        return new LayerFetchStats(digest, imageBytes, bytesFetched.sum(), hits.sum(), misses.sum(), fetches.sum(),
            verificationFailures.sum(), failedReads.sum(), prefetched.sum(), total, latencySumMicros.sum(),
            percentile(counts, total, 0.50), percentile(counts, total, 0.99));
    }

    // A log-linear histogram: 4 buckets per power of two, so a percentile is within 25% of the truth.
    static int bucket(long v) {
        if (v < 4) {
            return (int) v;
        }
        int e = 63 - Long.numberOfLeadingZeros(v);
        int sub = (int) ((v >>> (e - 2)) & 3);
        return 4 * (e - 1) + sub;
    }

    static long bucketUpperBound(int index) {
        if (index < 4) {
            return index;
        }
        int e = index / 4 + 1;
        int sub = index % 4;
        long lower = (long) (4 + sub) << (e - 2);
        return lower + (1L << (e - 2)) - 1;
    }

    private static long percentile(long[] counts, long total, double q) {
        if (total == 0) {
            return 0;
        }
        long rank = (long) Math.ceil(q * total);
        long seen = 0;
        for (int i = 0; i < counts.length; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return bucketUpperBound(i);
            }
        }
        return bucketUpperBound(counts.length - 1);
    }
}
