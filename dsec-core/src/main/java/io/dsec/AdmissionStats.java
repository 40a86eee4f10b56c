package io.dsec;

import java.time.Duration;
import java.util.Map;

/**
 * What admission control is doing, from {@link SandboxHost#admission()}: a consistent snapshot.
 *
 * @param queueLength         creations waiting in the admission queue now
 * @param inFlight            creations admitted and still being created now
 * @param holding             sandboxes admitted and not closed yet (in flight or running): their specs are the allocation
 * @param admitted            creations admitted since the host opened (at once or after waiting)
 * @param queued              creations that had to wait in the queue since the host opened
 * @param rejected            creations rejected since the host opened (at once, queue full or timed out)
 * @param rejectedByReason    {@code rejected} split by reason
 * @param rejectedByResource  rejections that named a short resource, split by resource
 * @param waitCount           admissions whose wait is counted in the wait figures (all admissions; zero wait if at once)
 * @param waitTotal           the sum of those waits
 * @param waitP50             median wait over the most recent admissions (up to 4096)
 * @param waitP99             99th percentile wait over the same
 * @param waitMax             longest wait over the same
 * @param capacity            what the host has: memory bytes, cores, pids, disk bytes of the state directory's file system
 * @param allocated           the sum of admitted sandboxes' specs: memory bytes, cores, pids (no disk)
 * @param used                the latest real use read: memory bytes in use on the host, cores the sandboxes are using,
 *                            disk bytes used
 */
public record AdmissionStats(int queueLength, int inFlight, int holding, long admitted, long queued, long rejected,
                             Map<AdmissionException.Reason, Long> rejectedByReason, Map<HostResource, Long> rejectedByResource,
                             long waitCount, Duration waitTotal, Duration waitP50, Duration waitP99, Duration waitMax,
                             Map<HostResource, Double> capacity, Map<HostResource, Double> allocated, Map<HostResource, Double> used) {
    public AdmissionStats {
        rejectedByReason = Map.copyOf(rejectedByReason);
        rejectedByResource = Map.copyOf(rejectedByResource);
        capacity = Map.copyOf(capacity);
        allocated = Map.copyOf(allocated);
        used = Map.copyOf(used);
    }

    /** The mean wait, zero if nothing was admitted yet. */
    public Duration waitMean() {
        return waitCount == 0 ? Duration.ZERO : waitTotal.dividedBy(waitCount);
    }
}
