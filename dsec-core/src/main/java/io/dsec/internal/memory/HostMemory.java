package io.dsec.internal.memory;

import io.dsec.MemoryStats;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** A host's memory component: pressure and meminfo, the cold memory status, and page cache reclaim with its running total. */
public final class HostMemory implements AutoCloseable {
    private final MemoryPressure pressure;
    private final ColdMemory cold;
    private final PageCacheReclaimer reclaimer = new PageCacheReclaimer();
    private final AtomicLong reclaimed = new AtomicLong();
    private final Object reclaimLock = new Object();

    public HostMemory() {
        this(new MemoryPressure(), ColdMemory.probe());
    }

    public HostMemory(MemoryPressure pressure, ColdMemory cold) {
        this.pressure = pressure;
        this.cold = cold;
    }

    public MemoryStats stats() {
        MemoryPressure.Reading r = pressure.read();
        return new MemoryStats(r.memInfo().totalBytes(), r.memInfo().availableBytes(), r.memInfo().cachedBytes(),
            r.memInfo().dirtyBytes(), r.psiAvailable(), r.some().avg10(), r.full().avg10(), cold.damonAvailable(), reclaimed.get());
    }

    public ColdMemory coldMemory() {
        return cold;
    }

    /** Reclaims page cache from the cgroup in {@code cgroupDirs} (one reclaim at a time per host); returns bytes freed. */
    public long reclaimPageCache(List<Path> cgroupDirs) {
        synchronized (reclaimLock) {
            long bytes = reclaimer.reclaim(cgroupDirs);
            reclaimed.addAndGet(bytes);
            return bytes;
        }
    }

    @Override
    public void close() {
        // Nothing runs in the background yet; a reclaim in progress restores its limit itself.
    }
}
