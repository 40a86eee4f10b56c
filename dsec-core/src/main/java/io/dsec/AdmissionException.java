package io.dsec;

import java.time.Duration;
import java.util.Optional;

/**
 * The host did not admit a sandbox: it would not fit (now, or ever, on this host), the admission queue was full, or
 * it waited in the queue longer than the host's admission timeout. The message says which resource was short, by
 * how much, and what to change.
 */
public class AdmissionException extends DsecException {
    private static final long serialVersionUID = 1L;

    /** Why a sandbox was not admitted. */
    public enum Reason {
        /** The spec alone asks for more than the whole host has: it can never be admitted here. */
        LARGER_THAN_HOST,
        /** Admitting it would make the sum of allocations exceed the overcommit ratio times capacity. */
        OVERCOMMIT,
        /** Admitting it would make the projected real use eat into the headroom kept free. */
        REAL_USE,
        /** As many creations as the host allows were already in flight (and queueing is off). */
        CREATIONS_IN_FLIGHT,
        /** The admission queue was full. */
        QUEUE_FULL,
        /** It waited in the admission queue longer than the admission timeout. */
        TIMEOUT
    }

    private final Reason reason;
    private final transient HostResource resource;
    private final double wanted;
    private final double limit;
    private final transient Duration waited;

    /**
     * @param resource the resource that was short, or null when none was (a full queue behind the in-flight limit)
     * @param wanted   what admitting the sandbox would have made of that resource (bytes, cores or pids), or NaN
     * @param limit    what it may be at most, or NaN
     * @param waited   how long it waited in the queue
     */
    public AdmissionException(String message, Reason reason, HostResource resource, double wanted, double limit, Duration waited) {
        super(message);
        this.reason = reason;
        this.resource = resource;
        this.wanted = wanted;
        this.limit = limit;
        this.waited = waited == null ? Duration.ZERO : waited;
    }

    public Reason reason() {
        return reason;
    }

    /** The resource that was short, if one was (not when only the in-flight limit held the sandbox back). */
    public Optional<HostResource> resource() {
        return Optional.ofNullable(resource);
    }

    /** What admitting the sandbox would have made of the short resource (bytes, cores or pids); NaN if none. */
    public double wanted() {
        return wanted;
    }

    /** What that may be at most (ratio times capacity, or capacity minus headroom); NaN if none. */
    public double limit() {
        return limit;
    }

    /** How long the request waited in the admission queue before this; zero if it was rejected at once. */
    public Duration waited() {
        return waited;
    }
}
