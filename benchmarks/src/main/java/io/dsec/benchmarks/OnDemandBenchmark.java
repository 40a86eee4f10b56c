package io.dsec.benchmarks;

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
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.FetchStats;
import io.dsec.image.LayerManifest;
import io.dsec.image.LoadMode;
import io.dsec.image.OnDemandImages;
import io.dsec.testing.TestHost;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * On-demand images against their baselines, in one run, on a realistic agent image (Debian minbase with
 * build-essential, git, python3 with pytest, dev, venv and pip, nodejs):
 * <ul>
 *   <li>fetched fraction of the base while a real Python test suite (a part of CPython's own) runs from the
 *       workspace, against what the kernel reads of the same image from a local file (page cache residency);</li>
 *   <li>a burst of N sandboxes, each with its own workspace over the shared base, on demand against full pull:
 *       wall time and bytes written to the host's disk;</li>
 *   <li>time to first exec on a cold host with and without prefetching the recorded trace.</li>
 * </ul>
 * Writes ondemand_fetch.json, ondemand_burst.json and ondemand_prefetch.json.
 */
final class OnDemandBenchmark {
    static final List<String> PACKAGES = List.of("python3", "python3-pytest", "python3-dev", "python3-venv", "python3-pip",
        "build-essential", "git", "nodejs", "curl", "procps", "less", "vim-tiny");
    static final String SUITE = "cd /repo && python3 -m test test_json test_textwrap test_string test_collections test_functools "
        + "test_difflib test_pprint test_argparse test_enum test_dataclasses test_shlex test_glob";
    /** Read-ahead settings compared, in chunks. */
    private static final List<Integer> READ_AHEAD = List.of(0, 4);
    private static final String FIRST_EXEC = "python3 -c 'import json, unittest, argparse; print(1)'";

    private OnDemandBenchmark() {
    }

    /** Runs the parts named ({@code fetch}, {@code burst}, {@code prefetch}). */
    static void run(Path results, Set<String> parts, List<Integer> burstSizes, List<Integer> chunkSizes) throws Exception {
        Path cache = Path.of(System.getenv().getOrDefault("DSEC_DEMO_CACHE", "/var/cache/dsec"));
        Path rootfs = DebianRootfs.ensure(cache.resolve("rootfs"), "bookworm", PACKAGES, "http://deb.debian.org/debian");
        Path workspaceTree = CpythonTests.ensure(cache);
        Path dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-bench-");
        try {
            if (parts.contains("fetch")) {
                fetchFraction(results, dir, rootfs, workspaceTree, chunkSizes);
            }
            if (parts.contains("burst")) {
                burst(results, dir, rootfs, burstSizes);
            }
            if (parts.contains("prefetch")) {
                prefetch(results, dir, rootfs);
            }
        } finally {
            TestHost.lastResortCleanup(dir);
        }
    }

    /** The kernel's reads from a local image against what on demand fetches, per chunk size, same task. */
    private static void fetchFraction(Path results, Path dir, Path rootfs, Path workspaceTree, List<Integer> chunkSizes) throws Exception {
        ResultFile out = new ResultFile("ondemand_fetch", "the same suite on the same image mounted from a local file (local layer store):"
            + " bytes of the image the kernel read (page cache residency, fincore), same run");
        long kernelRead;
        long imageBytes;
        double localSuiteMs;
        try (SandboxHost local = Sandboxes.builder().stateDir(dir.resolve("local")).build()) {
            Layer base = local.layers().fromDirectory(LayerKind.BASE, "agent-base:bookworm", rootfs);
            Layer ws = local.layers().fromDirectory(LayerKind.WORKSPACE, "cpython-tests:3.11", workspaceTree);
            imageBytes = base.sizeBytes();
            Path blob = dir.resolve("local/layers/blobs/sha256/" + base.hex() + ".erofs");
            HostIo.dropCaches();
            try (Sandbox sb = local.create(SandboxSpec.of(Image.of(base, ws)).memory("2g").cpus(2))) {
                long t0 = System.nanoTime();
                ExecResult r = sb.exec(Exec.shell(SUITE).timeout(Duration.ofMinutes(10)));
                localSuiteMs = (System.nanoTime() - t0) / 1e6;
                System.out.println("local: suite exit " + r.exitCode() + " in " + Math.round(localSuiteMs) + " ms; " + lastLine(r));
                kernelRead = HostIo.residentBytes(blob);
            }
        }
        out.put("image_mib", imageBytes / 1048576.0);
        out.put("kernel_read_mib", kernelRead / 1048576.0);
        out.put("kernel_read_pct", 100.0 * kernelRead / imageBytes);
        System.out.printf("kernel read %.1f MiB of %.1f MiB (%.2f%%)%n", kernelRead / 1048576.0, imageBytes / 1048576.0, 100.0 * kernelRead / imageBytes);
        for (int chunkSize : chunkSizes) {
          for (int readAhead : READ_AHEAD) {
            String tag = "_" + (chunkSize >> 10) + "k_ra" + readAhead;
            Path store = dir.resolve("store-fetch_" + (chunkSize >> 10) + "k");
            if (!Files.exists(store)) {
              Files.createDirectories(store);
              try (SandboxHost pusher = Sandboxes.builder().stateDir(dir.resolve("pusher" + tag))
                .layerStore(OnDemandImages.from(BlobStores.directory(store)).chunkSize(chunkSize).recordWindow(Duration.ZERO).build())
                  .build()) {
                pusher.layers().fromDirectory(LayerKind.BASE, "agent-base:bookworm", rootfs);
                pusher.layers().fromDirectory(LayerKind.WORKSPACE, "cpython-tests:3.11", workspaceTree);
              }
            }
            OnDemandImages images = OnDemandImages.from(BlobStores.directory(store)).recordWindow(Duration.ZERO).prefetch(false)
                .readAheadChunks(readAhead).build();
            HostIo.dropCaches();
            try (SandboxHost host = Sandboxes.builder().stateDir(dir.resolve("ondemand" + tag)).layerStore(images).build()) {
                Layer base = host.layers().find(LayerKind.BASE, "agent-base:bookworm").orElseThrow();
                Layer ws = host.layers().find(LayerKind.WORKSPACE, "cpython-tests:3.11").orElseThrow();
                try (Sandbox sb = host.create(SandboxSpec.of(Image.of(base, ws)).memory("2g").cpus(2))) {
                    long t0 = System.nanoTime();
                    ExecResult r = sb.exec(Exec.shell(SUITE).timeout(Duration.ofMinutes(10)));
                    double ms = (System.nanoTime() - t0) / 1e6;
                    FetchStats stats = images.stats(base).orElseThrow();
                    double pct = 100.0 * stats.bytesFetched() / stats.imageBytes();
                    System.out.printf("on demand, %d KiB chunks: suite exit %d in %d ms; fetched %.1f MiB (%.2f%%), amplification %.2f; %s%n",
                        chunkSize >> 10, r.exitCode(), Math.round(ms), stats.bytesFetched() / 1048576.0, pct,
                        (double) stats.bytesFetched() / kernelRead, lastLine(r));
                    out.put("fetched_mib" + tag, stats.bytesFetched() / 1048576.0);
                    out.put("fetched_pct" + tag, pct);
                    out.put("amplification_ratio" + tag, (double) stats.bytesFetched() / kernelRead);
                    out.put("suite_slowdown_ratio" + tag, ms / localSuiteMs);
                    out.put("fetch_p50_us" + tag, stats.fetchLatencyP50Micros());
                    out.put("fetch_p99_us" + tag, stats.fetchLatencyP99Micros());
                }
            }
          }
        }
        out.write(results);
    }

    /** N sandboxes at once, each with its own workspace over the shared base: on demand against full pull. */
    private static void burst(Path results, Path dir, Path rootfs, List<Integer> sizes) throws Exception {
        int most = sizes.stream().mapToInt(Integer::intValue).max().orElse(0);
        Path store = Files.createDirectories(dir.resolve("store-burst"));
        Path trees = Files.createDirectories(dir.resolve("workspaces"));
        ResultFile out = new ResultFile("ondemand_burst", "full pull (every chunk of every layer fetched and verified into the host cache"
            + " before its mount), same store, same sandboxes, same run");
        List<String> refs = new ArrayList<>();
        try (SandboxHost pusher = Sandboxes.builder().stateDir(dir.resolve("burst-pusher"))
            .layerStore(OnDemandImages.from(BlobStores.directory(store)).recordWindow(Duration.ZERO).build()).build()) {
            pusher.layers().fromDirectory(LayerKind.BASE, "agent-base:bookworm", rootfs);
            for (int i = 0; i < most; i++) {
                Path tree = Files.createDirectories(trees.resolve("ws" + i + "/repo"));
                Files.writeString(tree.resolve("task.txt"), "task " + i + "\n");
                Files.writeString(tree.resolve("solution.py"), "def answer():\n    return " + i + "\n");
                pusher.layers().fromDirectory(LayerKind.WORKSPACE, "task-" + i + ":1", trees.resolve("ws" + i));
                refs.add("task-" + i + ":1");
            }
        }
        out.put("dedup_ratio", dedupRatio(BlobStores.directory(store)));
        for (int n : sizes) {
            double[] onDemand = burstOnce(dir.resolve("burst-od-" + n), store, LoadMode.ON_DEMAND, refs.subList(0, n));
            double[] fullPull = burstOnce(dir.resolve("burst-fp-" + n), store, LoadMode.FULL_PULL, refs.subList(0, n));
            out.put("ondemand_wall_ms_n" + n, onDemand[0]).put("fullpull_wall_ms_n" + n, fullPull[0]);
            out.put("burst_speedup_ratio_n" + n, fullPull[0] / onDemand[0]);
            out.put("ondemand_ready_p50_ms_n" + n, onDemand[2]).put("ondemand_ready_p99_ms_n" + n, onDemand[3]);
            out.put("fullpull_ready_p50_ms_n" + n, fullPull[2]).put("fullpull_ready_p99_ms_n" + n, fullPull[3]);
            out.put("ondemand_disk_written_mib_n" + n, onDemand[1] / 1048576).put("fullpull_disk_written_mib_n" + n, fullPull[1] / 1048576);
            out.put("disk_written_reduction_pct_n" + n, 100.0 * (1 - onDemand[1] / fullPull[1]));
            System.out.printf("burst n=%d: on demand %.0f ms, %.1f MiB written; full pull %.0f ms, %.1f MiB written%n", n, onDemand[0],
                onDemand[1] / 1048576, fullPull[0], fullPull[1] / 1048576);
        }
        out.write(results);
    }

    /** {wall ms, bytes written to disk, ready p50 ms, ready p99 ms} for one burst on a fresh host with a cold cache. */
    private static double[] burstOnce(Path state, Path store, LoadMode mode, List<String> workspaces) throws Exception {
        OnDemandImages images = OnDemandImages.from(BlobStores.directory(store)).mode(mode).recordWindow(Duration.ZERO).prefetch(false).build();
        HostIo.dropCaches();
        try (SandboxHost host = Sandboxes.builder().stateDir(state).layerStore(images).build()) {
            Layer base = host.layers().find(LayerKind.BASE, "agent-base:bookworm").orElseThrow();
            List<Layer> ws = new ArrayList<>();
            for (String ref : workspaces) {
                ws.add(host.layers().find(LayerKind.WORKSPACE, ref).orElseThrow());
            }
            long written = HostIo.diskBytesWritten();
            long t0 = System.nanoTime();
            List<CompletableFuture<Double>> runs = new ArrayList<>();
            List<Sandbox> made = java.util.Collections.synchronizedList(new ArrayList<>());
            for (Layer w : ws) {
                runs.add(host.createAsync(SandboxSpec.of(Image.of(base, w)).memory("256m")).thenApply(sb -> {
                    made.add(sb);
                    ExecResult r = sb.exec(Exec.shell("cat /repo/task.txt && " + FIRST_EXEC).timeout(Duration.ofMinutes(10)));
                    if (!r.ok()) {
                        throw new IllegalStateException(sb.id() + ": " + r + " " + r.stderrText());
                    }
                    return (System.nanoTime() - t0) / 1e6;
                }));
            }
            List<Double> ready = new ArrayList<>();
            for (CompletableFuture<Double> f : runs) {
                ready.add(f.join());
            }
            double wall = (System.nanoTime() - t0) / 1e6;
            long bytes = HostIo.diskBytesWritten() - written;
            made.parallelStream().forEach(Sandbox::close);
            Percentiles p = new Percentiles(ready);
            return new double[] {wall, bytes, p.p(50), p.p(99)};
        }
    }

    /** Chunks referenced by all manifests over distinct chunks stored. */
    private static double dedupRatio(BlobStore store) {
        long referenced = 0;
        Set<String> distinct = new HashSet<>();
        for (String key : store.list("layers/sha256/")) {
            LayerManifest m = LayerManifest.parse(store.get(key), key);
            referenced += m.chunkCount();
            distinct.addAll(m.chunks());
        }
        return (double) referenced / distinct.size();
    }

    /** Time to first exec on a cold host, with and without the trace the first sandboxes recorded. */
    private static void prefetch(Path results, Path dir, Path rootfs) throws Exception {
        Path store = Files.createDirectories(dir.resolve("store-prefetch"));
        try (SandboxHost first = Sandboxes.builder().stateDir(dir.resolve("prefetch-first"))
            .layerStore(OnDemandImages.from(BlobStores.directory(store)).recordWindow(Duration.ofMinutes(5)).build()).build()) {
            Layer base = first.layers().fromDirectory(LayerKind.BASE, "agent-base:bookworm", rootfs);
            try (Sandbox sb = first.create(SandboxSpec.of(Image.of(base)).memory("512m"))) {
                sb.exec(Exec.shell(FIRST_EXEC));
            }
        }
        ResultFile out = new ResultFile("ondemand_prefetch", "the same cold start without prefetching the recorded trace, same run");
        List<Double> off = new ArrayList<>();
        List<Double> on = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            off.add(coldFirstExec(dir.resolve("prefetch-off-" + i), store, false));
            on.add(coldFirstExec(dir.resolve("prefetch-on-" + i), store, true));
        }
        Percentiles pOff = new Percentiles(off);
        Percentiles pOn = new Percentiles(on);
        out.put("first_exec_p50_ms_prefetch_off", pOff.p(50)).put("first_exec_p99_ms_prefetch_off", pOff.p(99));
        out.put("first_exec_p50_ms_prefetch_on", pOn.p(50)).put("first_exec_p99_ms_prefetch_on", pOn.p(99));
        out.put("prefetch_speedup_p50_ratio", pOff.p(50) / pOn.p(50));
        System.out.printf("first exec, cold: prefetch off p50 %.0f ms, on p50 %.0f ms%n", pOff.p(50), pOn.p(50));
        out.write(results);
    }

    private static double coldFirstExec(Path state, Path store, boolean prefetch) throws Exception {
        OnDemandImages images = OnDemandImages.from(BlobStores.directory(store)).recordWindow(Duration.ZERO).prefetch(prefetch).build();
        HostIo.dropCaches();
        try (SandboxHost host = Sandboxes.builder().stateDir(state).layerStore(images).build()) {
            Layer base = host.layers().find(LayerKind.BASE, "agent-base:bookworm").orElseThrow();
            long t0 = System.nanoTime();
            try (Sandbox sb = host.create(SandboxSpec.of(Image.of(base)).memory("512m"))) {
                ExecResult r = sb.exec(Exec.shell(FIRST_EXEC));
                double ms = (System.nanoTime() - t0) / 1e6;
                if (!r.ok()) {
                    throw new IllegalStateException("first exec failed: " + r.stderrText());
                }
                return ms;
            }
        }
    }

    private static String lastLine(ExecResult r) {
        List<String> lines = r.stdoutText().lines().filter(l -> !l.isBlank()).toList();
        return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
    }

    /** The workspace of the fetch benchmark: a part of CPython's own test suite, from Debian's libpython3.11-testsuite. */
    static final class CpythonTests {
        private CpythonTests() {
        }

        static Path ensure(Path cache) throws IOException, InterruptedException {
            Path tree = cache.resolve("src/cpython-tests");
            if (Files.isDirectory(tree.resolve("repo/test/test_json"))) {
                return tree;
            }
            Path debs = Files.createDirectories(cache.resolve("src/debs"));
            run(debs, "apt-get", "download", "libpython3.11-testsuite", "libpython3.11-stdlib");
            Path x = Files.createDirectories(cache.resolve("src/extract"));
            try (var files = Files.list(debs)) {
                for (Path deb : files.filter(p -> p.toString().endsWith(".deb")).toList()) {
                    run(debs, "dpkg-deb", "-x", deb.toString(), x.toString());
                }
            }
            Path test = x.resolve("usr/lib/python3.11/test");
            Files.createDirectories(tree.resolve("repo"));
            run(cache, "cp", "-a", test.toString(), tree.resolve("repo/").toString());
            run(cache, "find", tree.toString(), "-name", "__pycache__", "-prune", "-exec", "rm", "-rf", "{}", "+");
            return tree;
        }

        private static void run(Path cwd, String... argv) throws IOException, InterruptedException {
            Process p = new ProcessBuilder(argv).directory(cwd.toFile()).inheritIO().start();
            if (p.waitFor() != 0) {
                throw new IOException(String.join(" ", argv) + " failed");
            }
        }
    }
}
