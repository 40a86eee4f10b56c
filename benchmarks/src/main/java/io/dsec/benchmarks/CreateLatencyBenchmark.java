package io.dsec.benchmarks;

import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Create-to-first-exec latency at 1, 16 and 50 concurrent creations, warm layers, side by side with
 * {@code podman run --rm} of the same root filesystem in the same run. Writes create_latency.json.
 */
final class CreateLatencyBenchmark {
    private static final int[] CONCURRENCY = {1, 16, 50};

    private CreateLatencyBenchmark() {
    }

    static void run(Path results, int rounds) throws Exception {
        ResultFile out;
        try (BenchHost bench = new BenchHost()) {
            boolean podman = Podman.available();
            out = new ResultFile("create_latency", podman
                ? Podman.version() + ": podman run --rm (crun, --network none) of the same busybox rootfs, same run"
                : "none: podman not installed (apt-get install podman)");
            if (podman) {
                Podman.importRootfs(bench.baseRootfs);
            }
            // Keeps the layers mounted: the figures are for warm layers.
            try (Sandbox warm = bench.host.create(SandboxSpec.of(bench.image).memory("64m"))) {
                warm.exec("true");
                for (int c : CONCURRENCY) {
                    List<Double> dsec = new ArrayList<>();
                    List<Double> lifecycle = new ArrayList<>();
                    List<Double> base = new ArrayList<>();
                    for (int r = 0; r < roundsFor(c, rounds); r++) {
                        for (double[] sample : dsecRound(bench, c)) {
                            dsec.add(sample[0]);
                            lifecycle.add(sample[1]);
                        }
                        if (podman) {
                            base.addAll(podmanRound(c));
                        }
                    }
                    Percentiles d = new Percentiles(dsec);
                    Percentiles l = new Percentiles(lifecycle);
                    out.put("create_p50_ms_c" + c, d.p(50)).put("create_p99_ms_c" + c, d.p(99));
                    out.put("lifecycle_p50_ms_c" + c, l.p(50)).put("lifecycle_p99_ms_c" + c, l.p(99));
                    System.out.printf("c=%d dsec create-to-first-exec p50 %.1f ms p99 %.1f ms (n=%d)%n", c, d.p(50), d.p(99), d.count());
                    if (podman) {
                        Percentiles b = new Percentiles(base);
                        out.put("podman_run_p50_ms_c" + c, b.p(50)).put("podman_run_p99_ms_c" + c, b.p(99));
                        out.put("speedup_p50_ratio_c" + c, b.p(50) / d.p(50)).put("speedup_p99_ratio_c" + c, b.p(99) / d.p(99));
                        out.put("lifecycle_speedup_p50_ratio_c" + c, b.p(50) / l.p(50)).put("lifecycle_speedup_p99_ratio_c" + c, b.p(99) / l.p(99));
                        System.out.printf("c=%d podman run p50 %.1f ms p99 %.1f ms (n=%d)%n", c, b.p(50), b.p(99), b.count());
                    }
                }
            } finally {
                if (podman) {
                    Podman.removeImage();
                }
            }
        }
        out.write(results);
    }

    private static int roundsFor(int concurrency, int rounds) {
        return concurrency == 1 ? rounds * 10 : rounds;
    }

    /**
     * Starts {@code c} creations at once. Each sample is {create() to the first exec's result, create() to the
     * end of close()}: the second is the whole life, comparable to {@code podman run --rm}.
     */
    private static List<double[]> dsecRound(BenchHost bench, int c) {
        ExecutorService pool = Executors.newFixedThreadPool(c);
        List<CompletableFuture<double[]>> runs = new ArrayList<>();
        try {
            for (int i = 0; i < c; i++) {
                runs.add(CompletableFuture.supplyAsync(() -> {
                    long t0 = System.nanoTime();
                    double firstExec;
                    try (Sandbox sb = bench.host.create(SandboxSpec.of(bench.image).memory("64m"))) {
                        ExecResult r = sb.exec("true");
                        if (r.exitCode() != 0) {
                            throw new IllegalStateException("true failed in " + sb.id() + ": " + r);
                        }
                        firstExec = (System.nanoTime() - t0) / 1e6;
                    }
                    return new double[] {firstExec, (System.nanoTime() - t0) / 1e6};
                }, pool));
            }
            List<double[]> samples = new ArrayList<>();
            for (CompletableFuture<double[]> f : runs) {
                samples.add(f.join());
            }
            return samples;
        } finally {
            pool.shutdownNow();
        }
    }

    private static List<Double> podmanRound(int c) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(c);
        try {
            List<CompletableFuture<Double>> runs = new ArrayList<>();
            for (int i = 0; i < c; i++) {
                runs.add(CompletableFuture.supplyAsync(() -> {
                    long t0 = System.nanoTime();
                    try {
                        Podman.run(Podman.runArgv("true"));
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    return (System.nanoTime() - t0) / 1e6;
                }, pool));
            }
            List<Double> samples = new ArrayList<>();
            for (CompletableFuture<Double> f : runs) {
                samples.add(f.join());
            }
            return samples;
        } finally {
            pool.shutdownNow();
        }
    }
}
