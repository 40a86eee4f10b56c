package io.dsec.benchmarks;

import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.Snapshot;
import io.dsec.SnapshotTimings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * pack_diff snapshots and branching: snapshot time and source pause for 1, 10, 100 and 1000 MiB of changes; branch
 * N = 1, 8, 64 from one snapshot (time, host disk per branch); side by side with {@code podman commit} then
 * {@code podman run} of the committed image, same changes, same run. Writes snapshot.json.
 */
final class SnapshotBenchmark {
    private static final int[] SIZES_MIB = {1, 10, 100, 1000};
    private static final int[] BRANCHES = {1, 8, 64};
    private static final int[] PODMAN_SIZES_MIB = {10, 100};

    private SnapshotBenchmark() {
    }

    static void run(Path results, boolean quick) throws Exception {
        ResultFile out = new ResultFile("snapshot", Podman.available() ? Podman.version()
            + ": podman commit of a container with the same changes, then podman run --rm of the committed image, same run"
            : "none: podman not installed");
        try (BenchHost bench = new BenchHost()) {
            for (int mib : SIZES_MIB) {
                if (quick && mib > 100) {
                    continue;
                }
                int reps = mib >= 1000 ? 1 : mib >= 100 ? 3 : 5;
                List<Double> pause = new ArrayList<>();
                List<Double> total = new ArrayList<>();
                for (int r = 0; r < reps; r++) {
                    try (Sandbox sb = bench.host.create(SandboxSpec.of(bench.image).memory("256m"))) {
                        write(sb, mib);
                        Snapshot snap = sb.snapshot();
                        SnapshotTimings t = snap.timings().orElseThrow();
                        pause.add(t.pause().toNanos() / 1e6);
                        total.add(t.total().toNanos() / 1e6);
                        bench.host.snapshots().delete(snap.id(), true);
                    }
                }
                Percentiles p = new Percentiles(pause);
                Percentiles t = new Percentiles(total);
                out.put("pause_p50_ms_" + mib + "mib", p.p(50)).put("pause_p99_ms_" + mib + "mib", p.p(99));
                out.put("snapshot_p50_ms_" + mib + "mib", t.p(50)).put("snapshot_p99_ms_" + mib + "mib", t.p(99));
                System.out.printf("%d MiB changed: pause p50 %.1f ms, snapshot p50 %.0f ms (n=%d)%n", mib, p.p(50), t.p(50), reps);
            }
            try (Sandbox source = bench.host.create(SandboxSpec.of(bench.image).memory("256m"))) {
                write(source, 10);
                Snapshot snap = source.snapshot();
                for (int n : BRANCHES) {
                    if (quick && n > 8) {
                        continue;
                    }
                    long before = du(bench.host.stateDir().resolve("sandboxes"));
                    long written = HostIo.diskBytesWritten();
                    long t0 = System.nanoTime();
                    List<Sandbox> branches = snap.branch(n);
                    double ms = (System.nanoTime() - t0) / 1e6;
                    try {
                        long perBranch = (du(bench.host.stateDir().resolve("sandboxes")) - before) / n;
                        long writtenPerBranch = (HostIo.diskBytesWritten() - written) / n;
                        for (Sandbox b : branches) {
                            if (!b.exec("test", "-f", "/data/f0").ok()) {
                                throw new IllegalStateException(b.id() + " lacks the snapshot's files");
                            }
                        }
                        out.put("branch_total_ms_n" + n, ms);
                        out.put("branch_disk_bytes_per_branch_n" + n, perBranch);
                        out.put("branch_disk_written_bytes_per_branch_n" + n, writtenPerBranch);
                        System.out.printf("branch n=%d: %.0f ms, %d bytes of host disk per branch (%d written)%n", n, ms, perBranch, writtenPerBranch);
                    } finally {
                        branches.parallelStream().forEach(Sandbox::close);
                    }
                }
            }
            if (Podman.available()) {
                Podman.importRootfs(bench.baseRootfs);
                try {
                    for (int mib : PODMAN_SIZES_MIB) {
                        podmanSideBySide(bench, mib, out);
                    }
                } finally {
                    Podman.removeImage();
                }
            }
        }
        out.write(results);
    }

    /** The same changes, then commit and run: podman against dsec's snapshot and branch(1). */
    private static void podmanSideBySide(BenchHost bench, int mib, ResultFile out) throws Exception {
        double dsecSnapshot;
        double dsecBranch;
        try (Sandbox sb = bench.host.create(SandboxSpec.of(bench.image).memory("256m"))) {
            write(sb, mib);
            long t0 = System.nanoTime();
            Snapshot snap = sb.snapshot();
            dsecSnapshot = (System.nanoTime() - t0) / 1e6;
            t0 = System.nanoTime();
            List<Sandbox> one = snap.branch(1);
            ExecResult r = one.get(0).exec("true");
            dsecBranch = (System.nanoTime() - t0) / 1e6;
            one.forEach(Sandbox::close);
            if (!r.ok()) {
                throw new IllegalStateException("branch failed: " + r);
            }
            bench.host.snapshots().delete(snap.id(), true);
        }
        String name = "dsec-bench-commit";
        String image = "localhost/dsec-bench-committed:" + mib;
        List<String> run = new ArrayList<>(List.of("podman", "run", "--name", name, "--network", "none",
            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", Podman.IMAGE, "sh", "-c", changes(mib)));
        try {
            Podman.run(run);
            long t0 = System.nanoTime();
            Podman.run(List.of("podman", "commit", "-q", name, image));
            double commit = (System.nanoTime() - t0) / 1e6;
            t0 = System.nanoTime();
            Podman.run(List.of("podman", "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit",
                "nproc=1024:1024", image, "true"));
            double podmanRun = (System.nanoTime() - t0) / 1e6;
            out.put("podman_commit_ms_" + mib + "mib", commit).put("podman_run_committed_ms_" + mib + "mib", podmanRun);
            out.put("dsec_snapshot_ms_" + mib + "mib", dsecSnapshot).put("dsec_branch1_to_first_exec_ms_" + mib + "mib", dsecBranch);
            out.put("snapshot_speedup_ratio_" + mib + "mib", commit / dsecSnapshot);
            out.put("restore_speedup_ratio_" + mib + "mib", podmanRun / dsecBranch);
            System.out.printf("%d MiB: podman commit %.0f ms + run %.0f ms; dsec snapshot %.0f ms + branch(1) to first exec %.0f ms%n",
                mib, commit, podmanRun, dsecSnapshot, dsecBranch);
        } finally {
            Podman.run(List.of("podman", "rm", "-f", "--ignore", name));
            Podman.run(List.of("podman", "rmi", "-f", "--ignore", image));
        }
    }

    /** A shell command writing {@code mib} MiB of random data as 1 MiB files under /data. */
    private static String changes(int mib) {
        return "mkdir -p /data && i=0; while [ $i -lt " + mib + " ]; do head -c 1048576 /dev/urandom > /data/f$i; i=$((i+1)); done";
    }

    private static void write(Sandbox sb, int mib) {
        ExecResult r = sb.exec(Exec.shell(changes(mib)).timeout(Duration.ofMinutes(10)));
        if (!r.ok()) {
            throw new IllegalStateException("writing " + mib + " MiB failed: " + r.stderrText());
        }
    }

    /** Bytes of host disk under {@code dir}, not descending into mounts (a sandbox's root shows the shared layers). */
    private static long du(Path dir) throws Exception {
        Process p = new ProcessBuilder("du", "-sbx", dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
        p.waitFor();
        return Long.parseLong(out.split("\\s+")[0]);
    }
}
