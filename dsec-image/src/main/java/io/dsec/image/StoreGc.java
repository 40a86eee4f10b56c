package io.dsec.image;

import io.dsec.DsecException;
import io.dsec.InvalidSpecException;
import io.dsec.image.internal.gc.GarbageCollector;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Garbage collection of a shared {@link BlobStore}: mark and sweep with a grace period, safe to run while other hosts
 * push layers and take snapshots.
 *
 * <p><b>What stays.</b> The roots are every reference under {@code refs/} (its {@code digest}) and every snapshot
 * record {@code snapshots/<id>.json} (its {@code layers} array, and any other {@code digest} field in it). A root's manifest, every chunk it lists, and its
 * access trace stay. Manifests no root names, their traces, and chunks no reachable manifest lists are garbage.
 * References, snapshot records and anything outside {@code layers/}, {@code chunks/}, {@code traces/} are never
 * deleted; keys there that are not in dsec's format are left alone too.
 *
 * <p><b>Grace.</b> A store has no blob timestamps, so each run records the blobs it found unreferenced, with the time
 * it first saw each, in {@value #CANDIDATES_KEY}. A blob is deleted only when an earlier run saw it unreferenced at
 * least {@code grace} ago, it has stayed unreferenced at every run since, and it is still unreferenced when marked
 * again right before the sweep. A chunk listed by any manifest still in the store (also one not yet referenced, e.g.
 * a push that has written its manifest but not yet its reference) is never deleted before that manifest. So a push
 * in progress keeps its new chunks for {@code grace} after the first run that sees them, which must be longer than
 * the push takes from uploading its first chunk to writing its manifest and reference.
 *
 * <p><b>Residual window.</b> A push skips a chunk the store has. If it checks a chunk that was already garbage (or
 * that becomes garbage while the push runs) and the chunk is swept before the push writes its manifest, the pushed
 * layer lacks that chunk. With the default grace of one hour this needs either a push whose chunk phase lasts over
 * an hour, or a push of content dropped over an hour ago that overlaps the sweep of that very content. A run narrows
 * the second case: it lists manifests again before each batch of chunk deletions and spares the chunks of new ones,
 * puts back a manifest it deleted if a new reference names it before its chunks go, and reports what it could not
 * save in {@link Result#errors()}. A layer hit by it fails with a clear error when a host first serves it (every chunk
 * is checked to exist); pushing it again repairs it.
 *
 * <p><b>One run at a time.</b> A run holds a lease in {@value #LOCK_KEY} (renewed while it runs); a second run while
 * it is held fails. Hosts that run the GC should keep their clocks synchronised (NTP): skew eats into the grace.
 *
 * <p><b>Failing safe.</b> A reference, snapshot record or manifest that cannot be read or parsed stops the run before
 * it deletes anything, with a message naming the key: an unreadable root or manifest could be protecting anything.
 */
public final class StoreGc {
    /** Grace unless set: 1 hour, far longer than a push takes, short enough that space comes back the same day. */
    public static final Duration DEFAULT_GRACE = Duration.ofHours(1);
    /** Where runs keep the unreferenced blobs they saw and when they first saw them. */
    public static final String CANDIDATES_KEY = "gc/candidates.json";
    /** The lease a run holds while it runs. */
    public static final String LOCK_KEY = "gc/lock.json";

    private StoreGc() {
    }

    /** A run with {@link #DEFAULT_GRACE} and the system clock. */
    public static Result run(BlobStore store) {
        return run(store, DEFAULT_GRACE, Clock.systemUTC());
    }

    /**
     * Marks, records candidates and deletes what has been unreferenced for at least {@code grace}.
     *
     * @param store a writable store that can list keys (directory or S3)
     * @param grace how long a blob must stay unreferenced, across runs, before it is deleted; at least 0
     * @param clock the time source (tests inject one)
     * @throws DsecException when the store cannot be collected (read-only, cannot list), another run holds the lease,
     *                       or a root or manifest is damaged; nothing is deleted then
     */
    public static Result run(BlobStore store, Duration grace, Clock clock) {
        return new GarbageCollector(check(store), checkGrace(grace), checkClock(clock), false).run();
    }

    /**
     * What {@link #run(BlobStore, Duration, Clock)} would delete now, without deleting anything, writing the
     * candidates or taking the lease. {@link Result#deleted()} lists what would go.
     */
    public static Result dryRun(BlobStore store, Duration grace, Clock clock) {
        return new GarbageCollector(check(store), checkGrace(grace), checkClock(clock), true).run();
    }

    private static BlobStore check(BlobStore store) {
        if (store == null) {
            throw new InvalidSpecException("store", null, "give the BlobStore to collect (a directory or S3 store)");
        }
        return store;
    }

    private static Duration checkGrace(Duration grace) {
        if (grace == null || grace.isNegative()) {
            throw new InvalidSpecException("grace", grace, "use a duration >= 0, e.g. StoreGc.DEFAULT_GRACE (1 hour); it must "
                + "exceed how long a push takes");
        }
        return grace;
    }

    private static Clock checkClock(Clock clock) {
        if (clock == null) {
            throw new InvalidSpecException("clock", null, "give a clock, e.g. Clock.systemUTC()");
        }
        return clock;
    }

    /**
     * What a run did (or, for a dry run, would do).
     *
     * @param dryRun                   true when nothing was deleted or written
     * @param startedAt                when the run started
     * @param previousRunAt            when the run that wrote the candidates this one read ran; null on the first run
     * @param grace                    the grace used
     * @param refsScanned              references read
     * @param snapshotsScanned         snapshot records read
     * @param manifestsScanned         manifests read
     * @param chunksScanned            chunks listed
     * @param tracesScanned            traces listed
     * @param reachableManifests       manifests a root names
     * @param reachableChunks          distinct chunks reachable manifests list
     * @param candidates               blobs found unreferenced by this run
     * @param newCandidates            of those, first seen by this run (their grace starts now)
     * @param deletedManifests         manifests deleted
     * @param deletedChunks            chunks deleted
     * @param deletedTraces            traces deleted
     * @param bytesFreed               bytes of the deleted manifests and of the deleted chunks some manifest gave the
     *                                 size of
     * @param deletedOfUnknownSize     deleted blobs not counted in {@code bytesFreed} (traces, chunks no manifest listed)
     * @param deleted                  the keys deleted, sorted
     * @param errors                   what went wrong without stopping the run: references to missing layers, reachable
     *                                 layers that lack chunks, failed deletes, pushes the run could not protect
     * @param elapsed                  wall time of the run
     */
    public record Result(boolean dryRun, Instant startedAt, Instant previousRunAt, Duration grace,
                         int refsScanned, int snapshotsScanned, int manifestsScanned, int chunksScanned, int tracesScanned,
                         int reachableManifests, int reachableChunks, int candidates, int newCandidates,
                         int deletedManifests, int deletedChunks, int deletedTraces, long bytesFreed, int deletedOfUnknownSize,
                         List<String> deleted, List<String> errors, Duration elapsed) {
        public Result {
            deleted = List.copyOf(deleted);
            errors = List.copyOf(errors);
        }

        /** Blobs deleted (or, for a dry run, that would be). */
        public int deletedTotal() {
            return deletedManifests + deletedChunks + deletedTraces;
        }
    }
}
