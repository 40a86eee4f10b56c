package io.dsec.benchmarks;

import io.dsec.Exec;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Host memory and JVM heap per idle sandbox (its agent plus a shell waiting on a sleep), side by side with
 * idle podman containers running the same shell on the same rootfs. Writes idle_memory.json.
 */
final class IdleMemoryBenchmark {
    private static final String IDLE_SHELL = "while :; do sleep 3600; done";

    private IdleMemoryBenchmark() {
    }

    static void run(Path results, int sandboxes, int podmanContainers) throws Exception {
        ResultFile out;
        try (BenchHost bench = new BenchHost()) {
            boolean podman = Podman.available();
            out = new ResultFile("idle_memory", podman
                ? Podman.version() + ": podman run -d (crun + conmon) of the same shell on the same busybox rootfs, same run"
                : "none: podman not installed");
            List<Sandbox> idle = new ArrayList<>();
            try {
                long heapBefore = usedHeap();
                List<CompletableFuture<Sandbox>> creating = new ArrayList<>();
                for (int i = 0; i < sandboxes; i++) {
                    creating.add(bench.host.createAsync(SandboxSpec.of(bench.image).memory("64m")));
                }
                for (CompletableFuture<Sandbox> f : creating) {
                    Sandbox sb = f.join();
                    idle.add(sb);
                    sb.execAsync(Exec.shell(IDLE_SHELL).timeout(java.time.Duration.ZERO));
                }
                for (Sandbox sb : idle) {
                    // A round trip per sandbox: its shell has been started and everything is idle again.
                    sb.exec("true");
                }
                long heapAfter = usedHeap();
                long pss = 0;
                long cgroup = 0;
                for (Sandbox sb : idle) {
                    Path dir = ProcessMemory.memoryCgroupOf(ProcessMemory.cgroupPids(cgroupDir(sb)).get(0));
                    for (long pid : ProcessMemory.cgroupPids(dir)) {
                        pss += ProcessMemory.pssKib(pid);
                    }
                    cgroup += ProcessMemory.cgroupUsageKib(dir);
                }
                double pssKib = pss / (double) sandboxes;
                double cgroupKib = cgroup / (double) sandboxes;
                double heapKib = (heapAfter - heapBefore) / 1024.0 / sandboxes;
                out.put("sandboxes", sandboxes);
                out.put("pss_per_idle_sandbox_kib", pssKib);
                out.put("cgroup_mem_per_idle_sandbox_kib", cgroupKib);
                out.put("jvm_heap_per_idle_sandbox_kib", heapKib);
                System.out.printf("dsec: %d idle sandboxes: PSS %.0f KiB, cgroup %.0f KiB, JVM heap %.1f KiB each%n", sandboxes, pssKib, cgroupKib, heapKib);
                if (podman) {
                    measurePodman(bench, podmanContainers, out, pssKib);
                }
            } finally {
                idle.parallelStream().forEach(Sandbox::close);
            }
        }
        out.write(results);
    }

    private static Path cgroupDir(Sandbox sb) {
        for (Path p : List.of(Path.of("/sys/fs/cgroup/memory/dsec", sb.id()), Path.of("/sys/fs/cgroup/dsec", sb.id()))) {
            if (Files.isDirectory(p)) {
                return p;
            }
        }
        throw new IllegalStateException("no memory cgroup for " + sb.id());
    }

    /** The same shell idle in podman containers: PSS of the container's processes plus its conmon, and cgroup usage. */
    private static void measurePodman(BenchHost bench, int containers, ResultFile out, double dsecPss) throws Exception {
        Podman.importRootfs(bench.baseRootfs);
        List<String> ids = new ArrayList<>();
        try {
            for (int i = 0; i < containers; i++) {
                List<String> argv = new ArrayList<>(List.of("podman", "run", "-d", "--network", "none",
                    "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", Podman.IMAGE, "sh", "-c", IDLE_SHELL));
                ids.add(Podman.run(argv).trim());
            }
            long pss = 0;
            long cgroup = 0;
            for (String id : ids) {
                String[] pids = Podman.run(List.of("podman", "inspect", "--format", "{{.State.Pid}} {{.State.ConmonPid}}", id)).trim().split("\\s+");
                Path dir = ProcessMemory.memoryCgroupOf(Long.parseLong(pids[0]));
                for (long pid : ProcessMemory.cgroupPids(dir)) {
                    pss += ProcessMemory.pssKib(pid);
                }
                pss += ProcessMemory.pssKib(Long.parseLong(pids[1]));
                cgroup += ProcessMemory.cgroupUsageKib(dir);
            }
            double pssKib = pss / (double) containers;
            double cgroupKib = cgroup / (double) containers;
            out.put("podman_containers", containers);
            out.put("podman_pss_per_idle_container_kib", pssKib);
            out.put("podman_cgroup_mem_per_idle_container_kib", cgroupKib);
            out.put("pss_ratio_podman_over_dsec", pssKib / dsecPss);
            System.out.printf("podman: %d idle containers: PSS %.0f KiB (container + conmon), cgroup %.0f KiB each%n", containers, pssKib, cgroupKib);
        } finally {
            if (!ids.isEmpty()) {
                List<String> rm = new ArrayList<>(List.of("podman", "rm", "-f", "-t", "0"));
                rm.addAll(ids);
                Podman.run(rm);
            }
            Podman.removeImage();
        }
    }

    private static long usedHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
