package io.dsec.image.internal.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import io.dsec.image.SandboxFetchStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which sandbox a FUSE read is for, from the pid in its request header: a sandbox's processes run in the cgroup
 * {@code .../dsec/<sandbox id>}, which {@code /proc/<pid>/cgroup} names. The answer for a pid is cached for
 * {@code pidTtl} (a few seconds), so a busy reader costs one cache lookup per read, not a /proc read; a pid reused
 * or moved to another cgroup within that time is rare and then briefly counted for its old sandbox (or none).
 *
 * <p>Each sandbox's counters are kept while its reads come in and for {@code retention} after the last read or query,
 * for at most {@code maxSandboxes} sandboxes (the least recently used go first).
 */
public final class SandboxAttribution {
    /** A sandbox's cgroup: {@code /dsec/sb-<12 of [a-z2-7]>} at the end of a path (or followed by a child). */
    static final Pattern CGROUP = Pattern.compile("/dsec/(sb-[a-z2-7]{12})(?=/|$)", Pattern.MULTILINE);
    public static final Duration PID_TTL = Duration.ofSeconds(3);
    public static final Duration RETENTION = Duration.ofHours(1);
    public static final int MAX_SANDBOXES = 16_384;
    private static final Object NONE = new Object();

    private final IntFunction<String> sandboxOfPid;
    private final Cache<Integer, Object> byPid;
    private final Cache<String, SandboxStatsCollector> bySandbox;
    private final Function<Integer, Object> resolve = this::resolve;
    private final Function<String, SandboxStatsCollector> newCollector = SandboxStatsCollector::new;

    /**
     * @param sandboxOfPid the sandbox id of a pid, or null when it runs in none (or is gone)
     */
    public SandboxAttribution(IntFunction<String> sandboxOfPid, Duration pidTtl, Duration retention, int maxSandboxes,
                              Ticker ticker) {
        this.sandboxOfPid = sandboxOfPid;
        this.byPid = Caffeine.newBuilder().expireAfterWrite(pidTtl).maximumSize(65_536).ticker(ticker)
            .executor(Runnable::run).build();
        this.bySandbox = Caffeine.newBuilder().expireAfterAccess(retention).maximumSize(maxSandboxes).ticker(ticker)
            .executor(Runnable::run).build();
    }

    /** Attribution by {@code /proc/<pid>/cgroup}. */
    public static SandboxAttribution fromProc() {
        return new SandboxAttribution(SandboxAttribution::sandboxOfProcess, PID_TTL, RETENTION, MAX_SANDBOXES, Ticker.systemTicker());
    }

    /** The counters of the sandbox {@code pid} runs in, or null for none (pid 0: unknown). */
    public SandboxStatsCollector forPid(int pid) {
        if (pid <= 0) {
            return null;
        }
        Object found = byPid.get(pid, resolve);
        return found instanceof SandboxStatsCollector c ? c : null;
    }

    private Object resolve(Integer pid) {
        String id = sandboxOfPid.apply(pid);
        return id == null ? NONE : bySandbox.get(id, newCollector);
    }

    /** What the sandbox's reads have cost; empty when none of its reads reached this host's FUSE server (or it was forgotten). */
    public Optional<SandboxFetchStats> stats(String sandboxId) {
        SandboxStatsCollector c = bySandbox.getIfPresent(sandboxId);
        return c == null ? Optional.empty() : Optional.of(c.snapshot());
    }

    /** The sandbox id in the text of a {@code /proc/<pid>/cgroup}, or null. */
    static String sandboxOfCgroups(String cgroupFile) {
        Matcher m = CGROUP.matcher(cgroupFile);
        return m.find() ? m.group(1) : null;
    }

    /** The sandbox a process runs in, or null when it runs in none or is gone. */
    static String sandboxOfProcess(int pid) {
        try {
            return sandboxOfCgroups(new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cgroup")), StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            return null; // exited meanwhile
        }
    }
}
