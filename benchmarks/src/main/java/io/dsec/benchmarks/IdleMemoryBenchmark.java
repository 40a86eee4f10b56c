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
            try (Sandbox warm = bench.host.create(SandboxSpec.of(bench.image).memory("64m"))) {
                warm.exec("true");
                settle();
                long heapBefore = usedHeap();
                long availBefore = memAvailableKib();
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
                    // A round trip per sandbox: the shells have been started and everything is idle again.
                    sb.exec("true");
                }
                settle();
                long availAfter = memAvailableKib();
                long heapAfter = usedHeap();
                double hostKib = (availBefore - availAfter) / (double) sandboxes;
                double heapKib = (heapAfter - heapBefore) / 1024.0 / sandboxes;
                out.put("sandboxes", sandboxes);
                out.put("host_mem_per_idle_sandbox_kib", hostKib);
                out.put("jvm_heap_per_idle_sandbox_kib", heapKib);
                out.put("cgroup_mem_per_idle_sandbox_kib", cgroupKib(bench, idle));
                System.out.printf("dsec: %d idle sandboxes, host %.0f KiB each, cgroup %.0f KiB each, JVM heap %.1f KiB each%n",
                    sandboxes, hostKib, cgroupKib(bench, idle), heapKib);
            } finally {
                idle.parallelStream().forEach(Sandbox::close);
            }
            if (podman) {
                Podman.importRootfs(bench.baseRootfs);
                List<String> ids = new ArrayList<>();
                try {
                    settle();
                    long availBefore = memAvailableKib();
                    for (int i = 0; i < podmanContainers; i++) {
                        List<String> argv = new ArrayList<>(List.of("podman", "run", "-d", "--network", "none",
                            "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", Podman.IMAGE, "sh", "-c", IDLE_SHELL));
                        ids.add(Podman.run(argv).trim());
                    }
                    settle();
                    double podmanKib = (availBefore - memAvailableKib()) / (double) podmanContainers;
                    out.put("podman_containers", podmanContainers);
                    out.put("podman_host_mem_per_idle_container_kib", podmanKib);
                    System.out.printf("podman: %d idle containers, host %.0f KiB each%n", podmanContainers, podmanKib);
                } finally {
                    if (!ids.isEmpty()) {
                        List<String> rm = new ArrayList<>(List.of("podman", "rm", "-f", "-t", "0"));
                        rm.addAll(ids);
                        Podman.run(rm);
                    }
                    Podman.removeImage();
                }
            }
        }
        out.write(results);
    }

    private static double cgroupKib(BenchHost bench, List<Sandbox> sandboxes) {
        long total = 0;
        for (Sandbox sb : sandboxes) {
            for (Path file : List.of(Path.of("/sys/fs/cgroup/memory/dsec", sb.id(), "memory.usage_in_bytes"),
                Path.of("/sys/fs/cgroup/dsec", sb.id(), "memory.current"))) {
                try {
                    if (Files.exists(file)) {
                        total += Long.parseLong(Files.readString(file).trim());
                        break;
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        }
        return total / 1024.0 / sandboxes.size();
    }

    private static long memAvailableKib() throws IOException {
        return Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemAvailable:"))
            .map(l -> Long.parseLong(l.replaceAll("\\D+", ""))).findFirst().orElseThrow();
    }

    private static long usedHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Lets dirty pages and freed memory settle the same way before each reading. */
    private static void settle() throws IOException, InterruptedException {
        new ProcessBuilder("sync").start().waitFor();
    }
}
