package io.dsec.benchmarks;

import java.nio.file.Path;
import java.util.List;

/**
 * The benchmark runner: {@code bash benchmarks/run.sh [exec-roundtrip] [create-latency] [idle-memory] [ondemand] [snapshot] [noisy-neighbour] [density] [--quick]}.
 * Each benchmark writes benchmarks/results/NAME.json.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        List<String> argv = List.of(args);
        boolean quick = argv.contains("--quick");
        List<String> names = argv.stream().filter(a -> !a.startsWith("--")).toList();
        if (names.isEmpty()) {
            names = List.of("exec-roundtrip", "create-latency", "idle-memory", "ondemand", "snapshot", "noisy-neighbour", "density");
        }
        Path results = Path.of(System.getProperty("dsec.results", "benchmarks/results")).toAbsolutePath();
        for (String name : names) {
            System.out.println("== " + name);
            switch (name) {
                case "exec-roundtrip" -> ExecRoundTripBenchmark.run(results, quick);
                case "create-latency" -> CreateLatencyBenchmark.run(results, quick ? 1 : 3);
                case "idle-memory" -> IdleMemoryBenchmark.run(results, quick ? 20 : 100, quick ? 5 : 20);
                case "snapshot" -> SnapshotBenchmark.run(results, quick);
                case "noisy-neighbour" -> NoisyNeighbourBenchmark.run(results);
                case "density" -> DensityBenchmark.run(results, quick ? 100 : 1000);
                case "ondemand", "ondemand-fetch", "ondemand-burst", "ondemand-prefetch" -> OnDemandBenchmark.run(results,
                    name.equals("ondemand") ? java.util.Set.of("fetch", "burst", "prefetch") : java.util.Set.of(name.substring("ondemand-".length())),
                    quick ? List.of(16) : List.of(64, 256), quick ? List.of(512 << 10) : List.of(256 << 10, 512 << 10, 1 << 20));
                default -> throw new IllegalArgumentException("unknown benchmark " + name
                    + ": choose exec-roundtrip, create-latency, idle-memory, snapshot, noisy-neighbour, density, ondemand (or one part: ondemand-fetch, ondemand-burst, ondemand-prefetch)");
            }
        }
    }
}
