package io.dsec.internal.admission;

import io.dsec.AdmissionException;
import io.dsec.AdmissionException.Reason;
import io.dsec.AdmissionStats;
import io.dsec.DsecException;
import io.dsec.HostResource;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxSpec;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides when a sandbox may be created. A creation is admitted while (1) fewer than the limit of creations are in
 * flight, (2) per resource (memory, CPU, pids) the specs of admitted sandboxes plus this one stay within the
 * overcommit ratio times the host's capacity, and (3) the projected real use (what the host uses now, plus what the
 * creations in flight and this one are expected to use) stays under capacity minus the headroom, and the state
 * directory's file system keeps its headroom free. A spec larger than the whole host is rejected at once.
 *
 * <p>What does not fit waits in a bounded queue, in priority order, round-robin across tags, then first come first
 * served; the head is re-evaluated when a creation finishes, a sandbox closes and on every tick (real use may have
 * dropped), and nothing behind a blocked head overtakes it. Waiting costs no thread: {@link #submit} returns a future
 * the queue completes with a {@link Permit}. The permit holds the allocation until {@link Permit#release()} (the
 * sandbox closed or its creation failed) and the in-flight slot until {@link Permit#created} or release.
 */
public final class AdmissionController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdmissionController.class);
    /** How often the queue is re-evaluated and timeouts are checked. */
    public static final Duration TICK = Duration.ofMillis(250);
    /** How often the sandboxes' cgroups are read. */
    public static final Duration SAMPLE_EVERY = Duration.ofSeconds(2);
    private static final int WAIT_WINDOW = 4096;
    private static final double EPSILON = 1e-9;

    private final AdmissionPolicy policy;
    private final UsageSource usage;
    private final Clock clock;
    private final UsageSource.Capacity capacity;
    private final AutoCloseable ticking;

    // Everything below is guarded by this.
    private final FairQueue<Request> queue = new FairQueue<>(r -> r.spec.priority(), r -> r.spec.tag());
    private final Map<CompletableFuture<Permit>, Request> waiting = new IdentityHashMap<>();
    private final Set<Permit> holding = new LinkedHashSet<>();
    private long allocMemory;
    private double allocCpus;
    private long allocPids;
    private int inFlight;
    private long inFlightMemory;
    private double inFlightCpus;
    private long averageMemory;
    private double averageCpu;
    private double sandboxCpu;
    private Instant lastSample;
    private UsageSource.HostUse lastHost;
    private Shortage blocker;
    private boolean closed;
    private long admitted;
    private long queued;
    private long rejected;
    private final EnumMap<Reason, Long> byReason = new EnumMap<>(Reason.class);
    private final EnumMap<HostResource, Long> byResource = new EnumMap<>(HostResource.class);
    private long waitCount;
    private long waitTotalNanos;
    private final long[] waits = new long[WAIT_WINDOW];

    public AdmissionController(AdmissionPolicy policy, UsageSource usage, Clock clock, Ticker ticker) {
        this.policy = policy;
        this.usage = usage;
        this.clock = clock;
        this.capacity = usage.capacity();
        this.lastHost = usage.host();
        this.ticking = ticker.every(TICK, this::tick);
    }

    public AdmissionPolicy policy() {
        return policy;
    }

    public UsageSource.Capacity capacity() {
        return capacity;
    }

    /**
     * Asks to create a sandbox of {@code spec}. The future completes with a permit when it is admitted (at once if it
     * fits and nothing waits), or fails with an {@link AdmissionException} (too large for the host, queue full,
     * waited too long) or a {@link SandboxClosedException} (the host closed). Never blocks.
     */
    public CompletableFuture<Permit> submit(SandboxSpec spec) {
        Request r = new Request(spec, new CompletableFuture<>(), clock.instant());
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(closedException());
            }
            Shortage big = largerThanHost(spec);
            if (big != null) {
                return CompletableFuture.failedFuture(reject(big.reason, big, big.message, Duration.ZERO));
            }
            Shortage now = null;
            if (queue.isEmpty()) {
                now = evaluate(spec, inFlight < policy.maxCreationsInFlight() ? readHost() : lastHost);
                if (now == null) {
                    return CompletableFuture.completedFuture(admit(r, r.enqueued));
                }
                blocker = now;
                if (policy.queueLimit() == 0) {
                    return CompletableFuture.failedFuture(reject(now.reason, now, now.message
                        + " (admissionQueueLimit is 0: what does not fit now is rejected at once)", Duration.ZERO));
                }
            }
            if (queue.size() >= policy.queueLimit()) {
                Shortage why = now != null ? now : blocker;
                String message = "the admission queue is full: " + queue.size() + " creations wait, the most "
                    + "Sandboxes.builder().admissionQueueLimit(...) allows (" + policy.queueLimit() + ")"
                    + (why == null ? "" : "; what holds the queue: " + why.message)
                    + "; retry later, close sandboxes or raise the limit";
                return CompletableFuture.failedFuture(reject(Reason.QUEUE_FULL, why, message, Duration.ZERO));
            }
            queue.add(r);
            waiting.put(r.future, r);
            queued++;
        }
        pump();
        return r.future;
    }

    /** {@link #submit} and wait: throws what the future would fail with. */
    public Permit acquire(SandboxSpec spec) {
        CompletableFuture<Permit> f = submit(spec);
        try {
            return f.get();
        } catch (InterruptedException e) {
            if (!withdraw(f)) {
                f.thenAccept(Permit::release); // admitted meanwhile: nobody will use the permit
            }
            Thread.currentThread().interrupt();
            throw new DsecException("interrupted while waiting for admission of a sandbox; nothing was created");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new DsecException("admission failed: " + cause, cause);
        }
    }

    /**
     * Takes a request out of the queue if it still waits there (its future is then cancelled); false if it was
     * already admitted or refused, in which case whoever gets its permit must release it.
     */
    public boolean withdraw(CompletableFuture<Permit> future) {
        boolean removed;
        synchronized (this) {
            Request r = waiting.remove(future);
            removed = r != null && queue.remove(r);
        }
        if (removed) {
            future.cancel(false);
            pump();
        }
        return removed;
    }

    /** Samples the sandboxes' real use if due, times out requests that waited too long, re-evaluates the queue. */
    public void tick() {
        try {
            sampleIfDue();
            expire();
            pump();
        } catch (RuntimeException e) {
            LOG.warn("admission tick failed", e);
        }
    }

    /** Rejects every waiting request with {@link SandboxClosedException}; permits already given stay valid. */
    @Override
    public void close() {
        List<Request> dropped;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            dropped = queue.all();
            queue.clear();
            waiting.clear();
        }
        try {
            ticking.close();
        } catch (Exception e) {
            LOG.warn("stopping the admission ticker failed", e);
        }
        for (Request r : dropped) {
            r.future.completeExceptionally(closedException());
        }
    }

    public synchronized AdmissionStats stats() {
        int n = (int) Math.min(waitCount, WAIT_WINDOW);
        long[] window = Arrays.copyOf(waits, n);
        Arrays.sort(window);
        UsageSource.HostUse host = closed ? lastHost : readHost();
        Map<HostResource, Double> cap = Map.of(HostResource.MEMORY, (double) capacity.memoryBytes(), HostResource.CPU, capacity.cpus(),
            HostResource.PIDS, (double) capacity.pids(), HostResource.DISK, (double) capacity.diskBytes());
        Map<HostResource, Double> alloc = Map.of(HostResource.MEMORY, (double) allocMemory, HostResource.CPU, Math.max(0, allocCpus),
            HostResource.PIDS, (double) allocPids);
        Map<HostResource, Double> used = Map.of(HostResource.MEMORY, (double) host.memoryUsedBytes(), HostResource.CPU, sandboxCpu,
            HostResource.DISK, (double) Math.max(0, capacity.diskBytes() - host.diskFreeBytes()));
        return new AdmissionStats(queue.size(), inFlight, holding.size(), admitted, queued, rejected, byReason, byResource, waitCount,
            Duration.ofNanos(waitTotalNanos), Duration.ofNanos(percentile(window, 0.50)), Duration.ofNanos(percentile(window, 0.99)),
            Duration.ofNanos(n == 0 ? 0 : window[n - 1]), cap, alloc, used);
    }

    private static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    // ------------------------------------------------------------------------------------------------- decisions

    private void pump() {
        List<Request> admittedNow = new ArrayList<>();
        synchronized (this) {
            if (closed || queue.isEmpty()) {
                return;
            }
            if (inFlight >= policy.maxCreationsInFlight()) {
                blocker = evaluate(queue.peek().spec, lastHost);
                return;
            }
            UsageSource.HostUse host = readHost();
            Instant now = clock.instant();
            while (!queue.isEmpty()) {
                Request head = queue.peek();
                Shortage s = evaluate(head.spec, host);
                if (s != null) {
                    blocker = s;
                    break;
                }
                queue.poll();
                waiting.remove(head.future);
                head.permit = admit(head, now);
                admittedNow.add(head);
            }
        }
        for (Request r : admittedNow) {
            if (!r.future.complete(r.permit)) {
                r.permit.release();
            }
        }
    }

    private Shortage largerThanHost(SandboxSpec spec) {
        if (spec.memoryBytes() > capacity.memoryBytes()) {
            return new Shortage(Reason.LARGER_THAN_HOST, HostResource.MEMORY, spec.memoryBytes(), capacity.memoryBytes(),
                "memory: the spec asks for " + Units.bytes(spec.memoryBytes()) + ", larger than the whole host ("
                    + Units.bytes(capacity.memoryBytes()) + "); it can never be admitted here: give SandboxSpec.memory(...) at most "
                    + Units.bytes(capacity.memoryBytes()));
        }
        if (spec.cpus() > capacity.cpus() + EPSILON) {
            return new Shortage(Reason.LARGER_THAN_HOST, HostResource.CPU, spec.cpus(), capacity.cpus(),
                "cpu: the spec asks for " + Units.cores(spec.cpus()) + ", larger than the whole host (" + Units.cores(capacity.cpus())
                    + "); it can never be admitted here: give SandboxSpec.cpus(...) at most " + Units.number(capacity.cpus()));
        }
        if (spec.pidsLimit() > capacity.pids()) {
            return new Shortage(Reason.LARGER_THAN_HOST, HostResource.PIDS, spec.pidsLimit(), capacity.pids(),
                "pids: the spec asks for " + spec.pidsLimit() + " processes, larger than the whole host (pid_max " + capacity.pids()
                    + "); it can never be admitted here: give SandboxSpec.pids(...) at most " + capacity.pids());
        }
        return null;
    }

    /** What would stop {@code spec} from being admitted now, or null if nothing would. */
    private Shortage evaluate(SandboxSpec spec, UsageSource.HostUse host) {
        if (inFlight >= policy.maxCreationsInFlight()) {
            return new Shortage(Reason.CREATIONS_IN_FLIGHT, null, inFlight + 1, policy.maxCreationsInFlight(),
                "creations in flight: " + inFlight + " already, the most Sandboxes.builder().maxCreationsInFlight(...) allows ("
                    + policy.maxCreationsInFlight() + ")");
        }
        Shortage s = overcommit(HostResource.MEMORY, allocMemory, spec.memoryBytes(), capacity.memoryBytes());
        if (s == null) {
            s = overcommit(HostResource.CPU, allocCpus, spec.cpus(), capacity.cpus());
        }
        if (s == null) {
            s = overcommit(HostResource.PIDS, allocPids, spec.pidsLimit(), capacity.pids());
        }
        if (s != null) {
            return s;
        }
        long expected = expectedMemory(spec);
        long headroom = policy.headroomOf(capacity.memoryBytes());
        double projected = (double) host.memoryUsedBytes() + inFlightMemory + expected;
        double limit = (double) capacity.memoryBytes() - headroom;
        if (projected > limit) {
            return new Shortage(Reason.REAL_USE, HostResource.MEMORY, projected, limit,
                "memory: projected real use " + Units.bytes(projected) + " (" + Units.bytes(host.memoryUsedBytes()) + " in use on the host"
                    + (inFlight == 0 ? "" : ", " + Units.bytes(inFlightMemory) + " expected of " + inFlight + " creations in flight")
                    + ", " + Units.bytes(expected) + " expected of this sandbox) would exceed " + Units.bytes(limit) + ", the host's "
                    + Units.bytes(capacity.memoryBytes()) + " minus the headroom " + Units.bytes(headroom)
                    + "; close sandboxes, or lower Sandboxes.builder().headroom(...)");
        }
        if (policy.checksCpuUse()) {
            double expectedCpu = expectedCpu(spec);
            double projectedCpu = sandboxCpu + inFlightCpus + expectedCpu;
            double cpuLimit = capacity.cpus() * (1 - policy.cpuHeadroom());
            if (projectedCpu > cpuLimit + EPSILON) {
                return new Shortage(Reason.REAL_USE, HostResource.CPU, projectedCpu, cpuLimit,
                    "cpu: projected real use " + Units.cores(projectedCpu) + " (" + Units.cores(sandboxCpu) + " used by sandboxes"
                        + (inFlight == 0 ? "" : ", " + Units.cores(inFlightCpus) + " expected of " + inFlight + " creations in flight")
                        + ", " + Units.cores(expectedCpu) + " expected of this sandbox) would exceed " + Units.cores(cpuLimit)
                        + ", the host's " + Units.cores(capacity.cpus()) + " minus the headroom " + Units.number(policy.cpuHeadroom() * 100)
                        + "%; wait for sandboxes to go idle, close some, or lower Sandboxes.builder().cpuHeadroom(...)");
            }
        }
        if (host.diskFreeBytes() < policy.diskHeadroomBytes()) {
            double usedDisk = (double) capacity.diskBytes() - host.diskFreeBytes();
            return new Shortage(Reason.REAL_USE, HostResource.DISK, usedDisk, (double) capacity.diskBytes() - policy.diskHeadroomBytes(),
                "disk: " + Units.bytes(host.diskFreeBytes()) + " free in the state directory's file system, under the headroom "
                    + Units.bytes(policy.diskHeadroomBytes()) + " kept free; free disk space, or lower Sandboxes.builder().diskHeadroom(...)");
        }
        return null;
    }

    private Shortage overcommit(HostResource resource, double allocated, double more, double cap) {
        double ratio = policy.ratio(resource);
        double after = allocated + more;
        double limit = ratio * cap;
        if (after <= limit * (1 + EPSILON)) {
            return null;
        }
        String amount = switch (resource) {
            case MEMORY -> Units.bytes(more) + " more allocation";
            case CPU -> Units.cores(more) + " more allocation";
            default -> Units.number(more) + " more pids of allocation";
        };
        String of = switch (resource) {
            case MEMORY -> Units.bytes(cap);
            case CPU -> Units.cores(cap);
            default -> Units.number(cap) + " pids";
        };
        return new Shortage(Reason.OVERCOMMIT, resource, after, limit,
            resource.label() + ": admitting " + amount + " would make " + Units.ratio(Math.ceil(after / cap * 10) / 10) + " of " + of
                + ", over the overcommit ratio " + Units.ratio(ratio) + "; raise Sandboxes.builder().overcommit(HostResource." + resource
                + ", ...) or close sandboxes");
    }

    private long expectedMemory(SandboxSpec spec) {
        return Math.min(spec.memoryBytes(), Math.max(policy.expectedMemoryBytes(), averageMemory));
    }

    private double expectedCpu(SandboxSpec spec) {
        return Math.min(spec.cpus(), Math.max(policy.expectedCpuFraction() * spec.cpus(), averageCpu));
    }

    private Permit admit(Request r, Instant now) {
        SandboxSpec spec = r.spec;
        Permit p = new Permit(spec, expectedMemory(spec), expectedCpu(spec));
        allocMemory += spec.memoryBytes();
        allocCpus += spec.cpus();
        allocPids += spec.pidsLimit();
        inFlight++;
        inFlightMemory += p.expectedMemory;
        inFlightCpus += p.expectedCpu;
        holding.add(p);
        admitted++;
        long wait = Math.max(0, Duration.between(r.enqueued, now).toNanos());
        waits[(int) (waitCount % WAIT_WINDOW)] = wait;
        waitCount++;
        waitTotalNanos += wait;
        return p;
    }

    private AdmissionException reject(Reason reason, Shortage why, String message, Duration waited) {
        rejected++;
        byReason.merge(reason, 1L, Long::sum);
        HostResource resource = why == null ? null : why.resource;
        if (resource != null) {
            byResource.merge(resource, 1L, Long::sum);
        }
        return new AdmissionException(message, reason, resource, why == null ? Double.NaN : why.wanted, why == null ? Double.NaN : why.limit,
            waited);
    }

    private UsageSource.HostUse readHost() {
        try {
            lastHost = usage.host();
        } catch (RuntimeException e) {
            LOG.warn("reading the host's real use failed; admission goes on with the last reading", e);
        }
        return lastHost;
    }

    private static SandboxClosedException closedException() {
        return new SandboxClosedException("the SandboxHost was closed while this creation waited for admission; build a new one with "
            + "Sandboxes.builder()");
    }

    // ---------------------------------------------------------------------------------------------------- ticking

    private void expire() {
        List<Request> late = new ArrayList<>();
        List<AdmissionException> failures = new ArrayList<>();
        synchronized (this) {
            if (closed || queue.isEmpty()) {
                return;
            }
            Instant now = clock.instant();
            for (Request r : queue.all()) {
                Duration waited = Duration.between(r.enqueued, now);
                if (waited.compareTo(policy.timeout()) >= 0) {
                    queue.remove(r);
                    waiting.remove(r.future);
                    late.add(r);
                    Shortage why = blocker;
                    failures.add(reject(Reason.TIMEOUT, why, "waited " + Units.duration(waited) + " in the admission queue without being "
                        + "admitted, over Sandboxes.builder().admissionTimeout(...) (" + Units.duration(policy.timeout()) + ")"
                        + (why == null ? "" : "; what held the queue: " + why.message), waited));
                }
            }
        }
        for (int i = 0; i < late.size(); i++) {
            late.get(i).future.completeExceptionally(failures.get(i));
        }
    }

    private void sampleIfDue() {
        List<Permit> sampled;
        Instant now = clock.instant();
        synchronized (this) {
            if (closed || (lastSample != null && Duration.between(lastSample, now).compareTo(SAMPLE_EVERY) < 0)) {
                return;
            }
            lastSample = now;
            sampled = new ArrayList<>();
            for (Permit p : holding) {
                if (p.cgroupDirs != null) {
                    sampled.add(p);
                }
            }
        }
        UsageSource.SandboxUse[] reads = new UsageSource.SandboxUse[sampled.size()];
        for (int i = 0; i < reads.length; i++) {
            try {
                reads[i] = usage.sandbox(sampled.get(i).cgroupDirs);
            } catch (RuntimeException e) {
                reads[i] = null;
            }
        }
        synchronized (this) {
            for (int i = 0; i < reads.length; i++) {
                Permit p = sampled.get(i);
                UsageSource.SandboxUse u = reads[i];
                if (p.released || u == null) {
                    continue;
                }
                if (u.memoryBytes() >= 0) {
                    p.memory = u.memoryBytes();
                }
                if (u.cpuNanos() >= 0) {
                    if (p.cpuNanos >= 0 && p.cpuAt != null) {
                        long elapsed = Duration.between(p.cpuAt, now).toNanos();
                        if (elapsed > 0) {
                            p.cpuRate = Math.max(0, (u.cpuNanos() - p.cpuNanos) / (double) elapsed);
                        }
                    }
                    p.cpuNanos = u.cpuNanos();
                    p.cpuAt = now;
                }
            }
            long memSum = 0;
            int memN = 0;
            double cpuSum = 0;
            int cpuN = 0;
            for (Permit p : holding) {
                if (p.memory >= 0) {
                    memSum += p.memory;
                    memN++;
                }
                if (p.cpuRate >= 0) {
                    cpuSum += p.cpuRate;
                    cpuN++;
                }
            }
            averageMemory = memN == 0 ? 0 : memSum / memN;
            averageCpu = cpuN == 0 ? 0 : cpuSum / cpuN;
            sandboxCpu = cpuSum;
        }
    }

    // ------------------------------------------------------------------------------------------------------ types

    /** Why a request cannot be admitted now. */
    private record Shortage(Reason reason, HostResource resource, double wanted, double limit, String message) {
    }

    private static final class Request {
        final SandboxSpec spec;
        final CompletableFuture<Permit> future;
        final Instant enqueued;
        Permit permit;

        Request(SandboxSpec spec, CompletableFuture<Permit> future, Instant enqueued) {
            this.spec = spec;
            this.future = future;
            this.enqueued = enqueued;
        }
    }

    /** An admitted creation: holds its spec's allocation until released, and an in-flight slot until created. */
    public final class Permit {
        private final SandboxSpec spec;
        private final long expectedMemory;
        private final double expectedCpu;
        // guarded by the controller
        private boolean flying = true;
        private boolean released;
        private List<Path> cgroupDirs;
        private long memory = -1;
        private long cpuNanos = -1;
        private Instant cpuAt;
        private double cpuRate = -1;

        private Permit(SandboxSpec spec, long expectedMemory, double expectedCpu) {
            this.spec = spec;
            this.expectedMemory = expectedMemory;
            this.expectedCpu = expectedCpu;
        }

        public SandboxSpec spec() {
            return spec;
        }

        /** The sandbox is running: its in-flight slot frees; its real use is read from these cgroup directories from now on. */
        public void created(List<Path> sandboxCgroupDirs) {
            synchronized (AdmissionController.this) {
                if (released || !flying) {
                    return;
                }
                land();
                this.cgroupDirs = List.copyOf(sandboxCgroupDirs);
            }
            pump();
        }

        /** The sandbox closed or its creation failed: its allocation (and slot, if still in flight) frees. Idempotent. */
        public void release() {
            synchronized (AdmissionController.this) {
                if (released) {
                    return;
                }
                released = true;
                if (flying) {
                    land();
                }
                holding.remove(this);
                if (cpuRate > 0) {
                    sandboxCpu = Math.max(0, sandboxCpu - cpuRate);
                }
                allocMemory -= spec.memoryBytes();
                allocCpus -= spec.cpus();
                allocPids -= spec.pidsLimit();
                if (holding.isEmpty()) {
                    allocCpus = 0; // no drift from adding and subtracting doubles
                    sandboxCpu = 0;
                }
            }
            pump();
        }

        private void land() {
            flying = false;
            inFlight--;
            inFlightMemory -= expectedMemory;
            inFlightCpus -= expectedCpu;
            if (inFlight == 0) {
                inFlightCpus = 0;
            }
        }
    }
}
