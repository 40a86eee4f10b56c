package io.dsec.benchmarks;

import io.dsec.CpuClass;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.WriteOptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Noisy neighbour: a latency-sensitive request loop (a fixed CPU-bound step, then a 5 ms sleep) alone, and beside
 * BATCH sandboxes demanding 50%, 100% and 200% of the host's CPU, with the CPU classes and without them (everyone
 * NORMAL), in one run. Reports p50 and p99 slowdown of the step against running alone. Writes noisy_neighbour.json.
 */
final class NoisyNeighbourBenchmark {
    private static final int ITERATIONS = 1500;
    private static final int WORK = 200_000;
    private static final int SLEEP_US = 5_000;
    private static final int[] DEMAND_PCT = {50, 100, 200};

    private NoisyNeighbourBenchmark() {
    }

    static void run(Path results) throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        ResultFile out = new ResultFile("noisy_neighbour", "the same loop alone on the host, and with every sandbox NORMAL (equal weights), same run");
        try (BenchHost bench = new BenchHost()) {
            byte[] loop = Files.readAllBytes(compile(bench.dir));
            // Alone before and after the loaded runs, pooled: this host's own jitter moves a 1 ms step's p99 between runs.
            List<Double> aloneSamples = new ArrayList<>(measure(bench, loop, CpuClass.NORMAL, 0, CpuClass.NORMAL));
            List<Percentiles> loaded = new ArrayList<>();
            List<String> tags = new ArrayList<>();
            for (int pct : DEMAND_PCT) {
                int hogs = Math.max(1, pct * cores / 100);
                for (boolean classes : new boolean[] {false, true}) {
                    loaded.add(new Percentiles(measure(bench, loop, classes ? CpuClass.LATENCY_SENSITIVE : CpuClass.NORMAL, hogs,
                        classes ? CpuClass.BATCH : CpuClass.NORMAL)));
                    tags.add((classes ? "classes" : "no_classes") + "_load" + pct);
                }
            }
            aloneSamples.addAll(measure(bench, loop, CpuClass.NORMAL, 0, CpuClass.NORMAL));
            Percentiles alone = new Percentiles(aloneSamples);
            out.put("alone_p50_us", alone.p(50)).put("alone_p99_us", alone.p(99));
            System.out.printf("alone: p50 %.0f us, p99 %.0f us%n", alone.p(50), alone.p(99));
            for (int i = 0; i < tags.size(); i++) {
                Percentiles p = loaded.get(i);
                String tag = tags.get(i);
                double p50 = 100 * (p.p(50) / alone.p(50) - 1);
                double p99 = 100 * (p.p(99) / alone.p(99) - 1);
                out.put("p50_slowdown_pct_" + tag, p50).put("p99_slowdown_pct_" + tag, p99);
                out.put("p50_us_" + tag, p.p(50)).put("p99_us_" + tag, p.p(99));
                System.out.printf("%s: p50 %+.1f%%, p99 %+.1f%%%n", tag, p50, p99);
            }
        }
        out.write(results);
    }

    /** Runs the loop in a sandbox of class {@code lsClass} while {@code hogs} sandboxes of {@code hogClass} spin. */
    private static List<Double> measure(BenchHost bench, byte[] loop, CpuClass lsClass, int hogs, CpuClass hogClass) {
        List<Sandbox> made = new ArrayList<>();
        try {
            for (int i = 0; i < hogs; i++) {
                Sandbox hog = bench.host.create(SandboxSpec.of(bench.image).memory("64m").cpus(Runtime.getRuntime().availableProcessors())
                    .cpuClass(hogClass));
                made.add(hog);
                hog.execAsync(Exec.shell("while :; do :; done").timeout(Duration.ZERO));
            }
            Sandbox ls = bench.host.create(SandboxSpec.of(bench.image).memory("64m").cpus(1).cpuClass(lsClass));
            made.add(ls);
            ls.files().write("/tmp/latency", loop, WriteOptions.mode(0755));
            ExecResult r = ls.exec(Exec.of("/tmp/latency", Integer.toString(ITERATIONS), Integer.toString(WORK), Integer.toString(SLEEP_US))
                .timeout(Duration.ofMinutes(5)));
            if (!r.ok()) {
                throw new IllegalStateException("the loop failed: " + r + " " + r.stderrText());
            }
            List<Double> steps = new ArrayList<>();
            // The first iterations warm caches and the scheduler's view of the group; keep the steady state.
            r.stdoutText().lines().skip(ITERATIONS / 10).forEach(l -> steps.add(Double.parseDouble(l)));
            return steps;
        } finally {
            made.forEach(Sandbox::close);
        }
    }

    private static Path compile(Path dir) throws IOException, InterruptedException {
        Path source = Path.of("benchmarks/src/main/c/latency.c").toAbsolutePath();
        Path out = dir.resolve("latency");
        Process p = new ProcessBuilder("gcc", "-static", "-O1", "-o", out.toString(), source.toString()).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("gcc -static latency.c failed: " + log);
        }
        return out;
    }
}
