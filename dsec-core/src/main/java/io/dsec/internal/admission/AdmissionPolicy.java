package io.dsec.internal.admission;

import io.dsec.HostResource;
import io.dsec.InvalidSpecException;
import io.dsec.SandboxSpec;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;

/**
 * How a host admits sandboxes, as the builder checked it. Every {@code withX} returns a new policy and checks its
 * argument at once, naming the builder method and the value.
 *
 * @param overcommit           per resource (memory, CPU, pids), how many times its capacity the specs of admitted
 *                             sandboxes may add up to
 * @param headroomFraction     fraction of the host's memory that projected real use must leave free (0 if given as bytes)
 * @param headroomBytes        bytes of memory that projected real use must leave free (0 if given as a fraction)
 * @param cpuHeadroom          fraction of the host's cores that projected CPU use must leave free; negative: CPU real
 *                             use is not checked (CPU is elastic: a busy host slows down, it does not fail)
 * @param diskHeadroomBytes    bytes of the state directory's file system that must stay free
 * @param expectedMemoryBytes  the real memory use expected of a new sandbox (the running sandboxes' average if higher)
 * @param expectedCpuFraction  the fraction of its CPU quota a new sandbox is expected to use (the running ones' average
 *                             if higher)
 * @param maxCreationsInFlight how many creations may run at once (creation is I/O-heavy)
 * @param queueLimit           how many creations may wait; 0: a creation that does not fit now is rejected at once
 * @param timeout              how long a creation may wait in the queue
 */
public record AdmissionPolicy(Map<HostResource, Double> overcommit, double headroomFraction, long headroomBytes, double cpuHeadroom,
                              long diskHeadroomBytes, long expectedMemoryBytes, double expectedCpuFraction, int maxCreationsInFlight,
                              int queueLimit, Duration timeout) {

    public static final double MAX_RATIO = 10_000;
    private static final long MAX_BYTES = 1L << 50;

    /** The defaults: overcommit memory and CPU 100x, pids 1000x; 5% of memory and 512 MiB of disk kept free; 64 in flight. */
    public static final AdmissionPolicy DEFAULT = new AdmissionPolicy(
        Map.of(HostResource.MEMORY, 100.0, HostResource.CPU, 100.0, HostResource.PIDS, 1000.0),
        0.05, 0, -1, 512L << 20, 64L << 20, 0.05, 64, 4096, Duration.ofMinutes(5));

    public AdmissionPolicy {
        EnumMap<HostResource, Double> ratios = new EnumMap<>(HostResource.class);
        ratios.putAll(overcommit);
        for (HostResource r : new HostResource[] {HostResource.MEMORY, HostResource.CPU, HostResource.PIDS}) {
            if (!ratios.containsKey(r)) {
                throw new IllegalArgumentException("no overcommit ratio for " + r);
            }
        }
        overcommit = Map.copyOf(ratios);
    }

    public double ratio(HostResource resource) {
        return overcommit.get(resource);
    }

    /** Bytes of memory kept free on a host of {@code totalBytes}. */
    public long headroomOf(long totalBytes) {
        return Math.max(headroomBytes, (long) (headroomFraction * totalBytes));
    }

    public boolean checksCpuUse() {
        return cpuHeadroom >= 0;
    }

    public AdmissionPolicy withOvercommit(HostResource resource, double ratio) {
        if (resource == null || resource == HostResource.DISK) {
            throw new InvalidSpecException("overcommit.resource", resource,
                "give HostResource.MEMORY, CPU or PIDS; disk has no allocation (use diskHeadroom(...) to keep disk free)");
        }
        String field = "overcommit(" + resource + ")";
        if (!(ratio >= 1 && ratio <= MAX_RATIO)) {
            throw new InvalidSpecException(field, ratio, ratio < 1
                ? "give a ratio of 1 or more: below 1 the host would refuse allocations it has room for (1 = no overcommit)"
                : "give a ratio of 1 to 10000 (how many times its capacity the specs of admitted sandboxes may add up to)");
        }
        Map<HostResource, Double> next = new EnumMap<>(overcommit);
        next.put(resource, ratio);
        return new AdmissionPolicy(next, headroomFraction, headroomBytes, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes,
            expectedCpuFraction, maxCreationsInFlight, queueLimit, timeout);
    }

    /** Memory kept free as a fraction of the host's memory, 0 to 0.9. */
    public AdmissionPolicy withHeadroom(double fraction) {
        if (!(fraction >= 0 && fraction <= 0.9)) {
            throw new InvalidSpecException("headroom", fraction,
                "give the fraction of the host's memory to keep free, 0 to 0.9 (such as 0.05), or a size such as \"2g\"");
        }
        return new AdmissionPolicy(overcommit, fraction, 0, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes, expectedCpuFraction,
            maxCreationsInFlight, queueLimit, timeout);
    }

    /** Memory kept free as a size such as {@code 2g}. */
    public AdmissionPolicy withHeadroom(String size) {
        long bytes = SandboxSpec.parseSize("headroom", size);
        if (bytes > MAX_BYTES) {
            throw new InvalidSpecException("headroom", '"' + size + '"', "give at most 1 PiB of memory to keep free");
        }
        return new AdmissionPolicy(overcommit, 0, bytes, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes, expectedCpuFraction,
            maxCreationsInFlight, queueLimit, timeout);
    }

    public AdmissionPolicy withCpuHeadroom(double fraction) {
        if (!(fraction >= 0 && fraction <= 0.9)) {
            throw new InvalidSpecException("cpuHeadroom", fraction, "give the fraction of the host's cores to keep free, 0 to 0.9");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, fraction, diskHeadroomBytes, expectedMemoryBytes,
            expectedCpuFraction, maxCreationsInFlight, queueLimit, timeout);
    }

    public AdmissionPolicy withDiskHeadroom(String size) {
        long bytes = SandboxSpec.parseSize("diskHeadroom", size);
        if (bytes > MAX_BYTES) {
            throw new InvalidSpecException("diskHeadroom", '"' + size + '"', "give at most 1 PiB of disk to keep free");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, cpuHeadroom, bytes, expectedMemoryBytes,
            expectedCpuFraction, maxCreationsInFlight, queueLimit, timeout);
    }

    public AdmissionPolicy withExpectedUse(String memory, double cpuFraction) {
        long bytes = SandboxSpec.parseSize("expectedSandboxUse.memory", memory);
        if (bytes > (1L << 40)) {
            throw new InvalidSpecException("expectedSandboxUse.memory", '"' + memory + '"',
                "give the real memory a new sandbox is expected to use, at most 1t (such as 64m)");
        }
        if (!(cpuFraction >= 0 && cpuFraction <= 1)) {
            throw new InvalidSpecException("expectedSandboxUse.cpuFraction", cpuFraction,
                "give the fraction of its CPU quota a new sandbox is expected to use, 0 to 1 (such as 0.05)");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, cpuHeadroom, diskHeadroomBytes, bytes, cpuFraction,
            maxCreationsInFlight, queueLimit, timeout);
    }

    public AdmissionPolicy withMaxCreationsInFlight(int n) {
        if (n < 1 || n > 4096) {
            throw new InvalidSpecException("maxCreationsInFlight", n, "give 1 to 4096 creations at once");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes,
            expectedCpuFraction, n, queueLimit, timeout);
    }

    public AdmissionPolicy withQueueLimit(int n) {
        if (n < 0 || n > 1_000_000) {
            throw new InvalidSpecException("admissionQueueLimit", n,
                "give 0 to 1000000 waiting creations (0: reject at once whatever does not fit now)");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes,
            expectedCpuFraction, maxCreationsInFlight, n, timeout);
    }

    public AdmissionPolicy withTimeout(Duration wait) {
        if (wait == null || wait.isNegative() || wait.isZero() || wait.compareTo(Duration.ofDays(1)) > 0) {
            throw new InvalidSpecException("admissionTimeout", wait,
                "give a positive duration of at most a day, such as Duration.ofMinutes(5) (use admissionQueueLimit(0) not to wait)");
        }
        return new AdmissionPolicy(overcommit, headroomFraction, headroomBytes, cpuHeadroom, diskHeadroomBytes, expectedMemoryBytes,
            expectedCpuFraction, maxCreationsInFlight, queueLimit, wait);
    }
}
