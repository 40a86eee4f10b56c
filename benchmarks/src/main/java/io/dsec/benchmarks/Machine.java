package io.dsec.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A one-line description of the machine a benchmark ran on. */
final class Machine {
    private Machine() {
    }

    static String describe() {
        String cpu = "unknown cpu";
        long memKb = 0;
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse(cpu);
            memKb = Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemTotal:"))
                .map(l -> Long.parseLong(l.replaceAll("\\D+", ""))).findFirst().orElse(0L);
        } catch (IOException e) {
            // keep the defaults: the description is informative only
        }
        String kernel = System.getProperty("os.version");
        return Runtime.getRuntime().availableProcessors() + " cores " + cpu + ", " + (memKb >> 20) + " GiB, kernel " + kernel
            + ", java " + System.getProperty("java.version");
    }
}
