package io.dsec;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a sandbox is made of and what it may use. Immutable: every {@code withX}-style call returns a new spec
 * and validates its argument at once, naming the field, the value and the fix.
 *
 * <pre>{@code SandboxSpec.of(image).memory("2g").cpus(1).env("LANG", "C.UTF-8")}</pre>
 *
 * @param image       the layers
 * @param memoryBytes the memory limit of the sandbox's cgroup
 * @param cpus        CPU quota in cores (0.01 to 1024)
 * @param pidsLimit   the most processes and threads the sandbox may have
 * @param hostname    its hostname
 * @param env         environment every exec starts with (an exec's own env is laid over it)
 * @param workdir     working directory of execs that name none
 * @param labels      caller's labels, kept with the sandbox
 * @param network     its network; {@link NetworkPolicy#NONE} (loopback only) by default
 * @param cpuClass    how its processes compete for CPU; {@link CpuClass#NORMAL} by default
 * @param tag         who asked for it (a trainer, a task): admission is fair across tags
 * @param priority    admission order under a burst: higher first, 0 by default
 */
public record SandboxSpec(Image image, long memoryBytes, double cpus, int pidsLimit, String hostname,
                          Map<String, String> env, String workdir, Map<String, String> labels, NetworkPolicy network,
                          CpuClass cpuClass, String tag, int priority) {

    public static final long DEFAULT_MEMORY_BYTES = 2L << 30;
    public static final long MIN_MEMORY_BYTES = 8L << 20;
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?", Pattern.CASE_INSENSITIVE);
    private static final Pattern HOSTNAME = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    public SandboxSpec {
        if (image == null) {
            throw new InvalidSpecException("spec.image", null, "give an Image, such as Image.of(base, workspace, toolkit)");
        }
        checkMemory(memoryBytes);
        checkCpus(cpus);
        checkPids(pidsLimit);
        checkHostname(hostname);
        env = Map.copyOf(Objects.requireNonNull(env, "env"));
        env.forEach(SandboxSpec::checkEnv);
        checkWorkdir(workdir);
        labels = Map.copyOf(Objects.requireNonNull(labels, "labels"));
        Objects.requireNonNull(network, "network");
        Objects.requireNonNull(cpuClass, "cpuClass");
        if (tag == null || tag.isEmpty() || tag.length() > 128) {
            throw new InvalidSpecException("spec.tag", tag, "give 1-128 characters naming who asks, such as the trainer's name");
        }
        if (priority < -1000 || priority > 1000) {
            throw new InvalidSpecException("spec.priority", priority, "give -1000 to 1000; higher is admitted first");
        }
    }

    /** A spec with defaults: 2 GiB, 1 CPU, 4096 pids, hostname {@code sandbox}, workdir {@code /}, no network. */
    public static SandboxSpec of(Image image) {
        return new SandboxSpec(image, DEFAULT_MEMORY_BYTES, 1.0, 4096, "sandbox", Map.of(), "/", Map.of(), NetworkPolicy.NONE,
            CpuClass.NORMAL, "default", 0);
    }

    /** Memory limit as a size such as {@code 512m}, {@code 2g} or {@code 2GiB}. */
    public SandboxSpec memory(String size) {
        return memoryBytes(parseSize("spec.memory", size));
    }

    public SandboxSpec memoryBytes(long bytes) {
        return new SandboxSpec(image, bytes, cpus, pidsLimit, hostname, env, workdir, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec cpus(double cores) {
        return new SandboxSpec(image, memoryBytes, cores, pidsLimit, hostname, env, workdir, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec pids(int limit) {
        return new SandboxSpec(image, memoryBytes, cpus, limit, hostname, env, workdir, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec hostname(String name) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, name, env, workdir, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec env(String name, String value) {
        checkEnv(name, value);
        Map<String, String> next = new LinkedHashMap<>(env);
        next.put(name, value);
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, next, workdir, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec workdir(String path) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, path, labels, network, cpuClass, tag, priority);
    }

    public SandboxSpec label(String key, String value) {
        if (key == null || key.isEmpty() || value == null) {
            throw new InvalidSpecException("spec.label", key + "=" + value, "labels need a non-empty key and a value");
        }
        Map<String, String> next = new LinkedHashMap<>(labels);
        next.put(key, value);
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, workdir, next, network, cpuClass, tag, priority);
    }

    public SandboxSpec network(NetworkPolicy policy) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, workdir, labels, policy, cpuClass, tag, priority);
    }

    public SandboxSpec cpuClass(CpuClass cls) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, workdir, labels, network, cls, tag, priority);
    }

    /** Who asks for the sandbox (a trainer, a task); admission under a burst is fair across tags. */
    public SandboxSpec tag(String submitter) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, workdir, labels, network, cpuClass, submitter, priority);
    }

    /** Admission order under a burst, -1000 to 1000: higher first. */
    public SandboxSpec priority(int order) {
        return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env, workdir, labels, network, cpuClass, tag, order);
    }

    public SandboxSpec image(Image newImage) {
        return new SandboxSpec(newImage, memoryBytes, cpus, pidsLimit, hostname, env, workdir, labels, network, cpuClass, tag, priority);
    }

    /** Parses sizes such as {@code 512m}, {@code 2g}, {@code 2GiB} or plain bytes; the field name goes into errors. */
    public static long parseSize(String field, String size) {
        if (size == null) {
            throw new InvalidSpecException(field, null, "give a size such as 512m or 2g");
        }
        Matcher m = SIZE.matcher(size.trim());
        if (!m.matches()) {
            throw new InvalidSpecException(field, '"' + size + '"', "give a size such as 512m, 2g or 2GiB (suffixes k, m, g, t; powers of 1024)");
        }
        long value;
        try {
            value = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new InvalidSpecException(field, '"' + size + '"', "the number is too large");
        }
        int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            case "t" -> 40;
            default -> 0;
        };
        if (value > (Long.MAX_VALUE >> shift)) {
            throw new InvalidSpecException(field, '"' + size + '"', "the size is too large");
        }
        return value << shift;
    }

    private static void checkMemory(long bytes) {
        if (bytes < MIN_MEMORY_BYTES) {
            throw new InvalidSpecException("spec.memory", bytes + " bytes", "give at least 8m; a sandbox's agent and shell need a few MiB");
        }
        if (bytes > (1L << 50)) {
            throw new InvalidSpecException("spec.memory", bytes + " bytes", "give at most 1 PiB");
        }
    }

    private static void checkCpus(double cores) {
        if (!(cores >= 0.01 && cores <= 1024)) {
            throw new InvalidSpecException("spec.cpus", cores, "give a CPU quota between 0.01 and 1024 cores");
        }
    }

    private static void checkPids(int limit) {
        if (limit < 8 || limit > 4_194_304) {
            throw new InvalidSpecException("spec.pids", limit, "give between 8 and 4194304 processes");
        }
    }

    private static void checkHostname(String name) {
        if (name == null || !HOSTNAME.matcher(name).matches()) {
            throw new InvalidSpecException("spec.hostname", name, "use 1-63 letters, digits or '-', not starting or ending with '-'");
        }
    }

    private static void checkWorkdir(String path) {
        if (path == null || !path.startsWith("/") || path.indexOf('\0') >= 0) {
            throw new InvalidSpecException("spec.workdir", path, "give an absolute path inside the sandbox, such as /repo");
        }
    }

    static void checkEnv(String name, String value) {
        if (name == null || !ENV_NAME.matcher(name).matches()) {
            throw new InvalidSpecException("env name", name, "use letters, digits and '_', not starting with a digit");
        }
        if (value == null || value.indexOf('\0') >= 0) {
            throw new InvalidSpecException("env " + name, value, "give a value without NUL bytes");
        }
    }
}
