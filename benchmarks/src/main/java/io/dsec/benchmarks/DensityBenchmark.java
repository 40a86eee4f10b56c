package io.dsec.benchmarks;

import io.dsec.AdmissionException;
import io.dsec.AdmissionStats;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.examples.DebianRootfs;
import io.dsec.testing.TestHost;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Density and burst: N creation requests at once (createAsync through admission) for idle agent-like sandboxes (the
 * agent, a shell and a small Python process), each allocated 2 GiB, on a Debian base with python3. Reports time to
 * ready (p50, p99), rejections by reason, the longest queue, sandboxes per GiB of host memory, the allocated/physical
 * ratio, exec p99 on random sandboxes while all run, and OOM kills. Writes density.json.
 */
final class DensityBenchmark {
    private static final String IDLE = "python3 -c 'import time\nwhile True: time.sleep(3600)' & while :; do sleep 3600; done";

    private DensityBenchmark() {
    }

    static void run(Path results, int n) throws Exception {
        Path cache = Path.of(System.getenv().getOrDefault("DSEC_DEMO_CACHE", "/var/cache/dsec"));
        Path rootfs = DebianRootfs.ensure(cache.resolve("rootfs"), "bookworm", List.of("python3", "python3-pytest"), "http://deb.debian.org/debian");
        Path dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-bench-");
        ResultFile out = new ResultFile("density", "none for density (absolute figures); the burst's time to ready is against the same"
            + " host's single create (create_latency.json) and podman run of 50 at once (5.5 s p50 there)");
        // Agent sandboxes sit ~90% idle: 1 CPU each for 1,000 of them on 2 cores is 500x, above the default 100x.
        try (SandboxHost host = Sandboxes.builder().stateDir(dir.resolve("state")).cpuOvercommit(1000).build()) {
            Layer base = host.layers().fromDirectory(LayerKind.BASE, "debian-12-python:bookworm", rootfs);
            Image image = Image.of(base);
            long memTotal = meminfo("MemTotal:");
            long availBefore = meminfo("MemAvailable:");
            List<Sandbox> running = Collections.synchronizedList(new ArrayList<>());
            List<Double> ready = Collections.synchronizedList(new ArrayList<>());
            Map<String, Long> rejected = new java.util.concurrent.ConcurrentHashMap<>();
            int maxQueue = 0;
            long t0 = System.nanoTime();
            List<CompletableFuture<Void>> requests = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                requests.add(host.createAsync(SandboxSpec.of(image).memory("2g").tag("trainer-" + (i % 4))).handle((sb, e) -> {
                    if (e != null) {
                        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                        String reason = cause instanceof AdmissionException a ? "admission_" + a.reason().name().toLowerCase() : "error";
                        rejected.merge(reason, 1L, Long::sum);
                        return null;
                    }
                    running.add(sb);
                    sb.execAsync(Exec.shell(IDLE).timeout(Duration.ZERO));
                    ExecResult r = sb.exec("true");
                    if (r.ok()) {
                        ready.add((System.nanoTime() - t0) / 1e6);
                    }
                    return null;
                }));
                maxQueue = Math.max(maxQueue, host.admission().queueLength());
            }
            for (CompletableFuture<Void> f : requests) {
                f.join();
                maxQueue = Math.max(maxQueue, host.admission().queueLength());
            }
            double burstMs = (System.nanoTime() - t0) / 1e6;
            // Each sandbox's Python must be up before memory is read: wait for it in every sandbox (bounded).
            int pythons = 0;
            for (Sandbox sb : running) {
                ExecResult up = sb.exec(Exec.shell("i=0; until grep -qs python3 /proc/[0-9]*/comm; do i=$((i+1)); [ $i -gt 200 ] && exit 1; "
                    + "sleep 0.05; done").timeout(Duration.ofSeconds(30)));
                pythons += up.ok() ? 1 : 0;
            }
            // Exec round trips on random sandboxes while all of them run.
            Random random = new Random(1);
            List<Double> execs = new ArrayList<>();
            for (int i = 0; i < 200 && !running.isEmpty(); i++) {
                Sandbox sb = running.get(random.nextInt(running.size()));
                long e0 = System.nanoTime();
                sb.exec("true");
                execs.add((System.nanoTime() - e0) / 1e6);
            }
            long used = availBefore - meminfo("MemAvailable:");
            AdmissionStats stats = host.admission();
            Percentiles p = ready.isEmpty() ? null : new Percentiles(ready);
            Percentiles e = new Percentiles(execs);
            out.put("requests", n).put("running", running.size()).put("burst_wall_ms", burstMs);
            if (p != null) {
                out.put("ready_p50_ms", p.p(50)).put("ready_p99_ms", p.p(99));
            }
            rejected.forEach((k, v) -> out.put("rejected_" + k, v));
            out.put("max_queue_length", maxQueue);
            out.put("admission_wait_p99_ms", stats.waitP99().toNanos() / 1e6);
            out.put("host_mem_used_gib", used / 1048576.0);
            out.put("sandboxes_per_gib", running.size() / (used / 1048576.0));
            out.put("allocated_over_physical_ratio", running.size() * 2.0 * 1048576 / memTotal);
            out.put("exec_p50_ms_all_running", e.p(50)).put("exec_p99_ms_all_running", e.p(99));
            out.put("oom_kills", oomKills(host, running));
            out.put("sandboxes_with_python", pythons);
            out.put("admission_queued_total", stats.queued());
            System.out.printf("%d/%d running (%d with Python) in %.1f s (ready p50 %.0f ms, p99 %.0f ms), %.2f GiB used: %.1f sandboxes/GiB,"
                + " %.1fx allocated/physical; exec p50 %.1f ms p99 %.1f ms; rejected %s; queued %d, longest queue seen %d%n", running.size(), n,
                pythons, burstMs / 1000, p == null ? 0 : p.p(50), p == null ? 0 : p.p(99), used / 1048576.0, running.size() / (used / 1048576.0),
                running.size() * 2.0 * 1048576 / memTotal, e.p(50), e.p(99), rejected, stats.queued(), maxQueue);
            running.parallelStream().forEach(Sandbox::close);
        } finally {
            TestHost.lastResortCleanup(dir);
        }
        out.write(results);
    }

    private static long oomKills(SandboxHost host, List<Sandbox> sandboxes) throws IOException {
        long kills = 0;
        for (Sandbox sb : sandboxes) {
            for (Path f : List.of(Path.of("/sys/fs/cgroup/memory/dsec", sb.id(), "memory.oom_control"), Path.of("/sys/fs/cgroup/dsec", sb.id(), "memory.events"))) {
                if (Files.exists(f)) {
                    for (String line : Files.readAllLines(f)) {
                        if (line.startsWith("oom_kill ")) {
                            kills += Long.parseLong(line.substring(9).trim());
                        }
                    }
                }
            }
        }
        return kills;
    }

    /** A /proc/meminfo field in KiB. */
    private static long meminfo(String field) throws IOException {
        return Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith(field))
            .map(l -> Long.parseLong(l.replaceAll("\\D+", ""))).findFirst().orElseThrow();
    }
}
