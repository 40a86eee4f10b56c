package io.dsec.internal.admission;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Numbers admission tests feed in place of the kernel's, and a clock they move by hand. */
final class FakeUsage implements UsageSource {
    static final long GIB = 1L << 30;
    static final long MIB = 1L << 20;

    volatile Capacity capacity = new Capacity(24 * GIB, 2, 32768, 100 * GIB);
    volatile long memoryUsed = 2 * GIB;
    volatile long diskFree = 50 * GIB;
    final Map<Path, SandboxUse> sandboxes = new HashMap<>();

    @Override
    public Capacity capacity() {
        return capacity;
    }

    @Override
    public HostUse host() {
        return new HostUse(memoryUsed, diskFree);
    }

    @Override
    public synchronized SandboxUse sandbox(List<Path> cgroupDirs) {
        return sandboxes.get(cgroupDirs.get(0));
    }

    synchronized void sandbox(Path dir, long memory, long cpuNanos) {
        sandboxes.put(dir, new SandboxUse(memory, cpuNanos));
    }

    static final class MovableClock extends Clock {
        private volatile Instant now = Instant.parse("2025-01-01T00:00:00Z");

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
