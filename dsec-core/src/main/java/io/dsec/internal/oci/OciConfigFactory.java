package io.dsec.internal.oci;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * Writes the OCI runtime config of a sandbox. Safe by default: own pid, mount, ipc, uts, net and cgroup
 * namespaces (loopback only), a small capability set, no_new_privileges, seccomp, masked /proc files and
 * read-only /proc/sys and /sys.
 */
public final class OciConfigFactory {
    /**
     * What root inside a sandbox may do. Enough to install packages, own files and run as other users; not
     * enough to mount, trace, load modules, make devices, or use raw sockets.
     */
    public static final List<String> CAPABILITIES = List.of(
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
        "CAP_NET_BIND_SERVICE");

    public static final List<String> MASKED_PATHS = List.of(
        "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/kpagecgroup",
        "/proc/kpageflags", "/proc/kpagecount", "/proc/latency_stats", "/proc/sched_debug", "/proc/timer_list",
        "/proc/timer_stats", "/proc/scsi", "/proc/sysrq-trigger", "/sys/firmware", "/sys/kernel/debug",
        "/sys/kernel/security", "/sys/fs/selinux", "/sys/devices/virtual/powercap");

    public static final List<String> READONLY_PATHS = List.of(
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys");

    private static final long CPU_PERIOD_US = 100_000;

    private final long nofileHardLimit;
    private final long nprocHardLimit;

    /**
     * @param nofileHardLimit the host's hard RLIMIT_NOFILE: without CAP_SYS_RESOURCE no sandbox may get more
     * @param nprocHardLimit  the host's hard RLIMIT_NPROC
     */
    public OciConfigFactory(long nofileHardLimit, long nprocHardLimit) {
        this.nofileHardLimit = nofileHardLimit;
        this.nprocHardLimit = nprocHardLimit;
    }

    public ObjectNode config(ContainerPlan plan) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode root = f.objectNode();
        root.put("ociVersion", "1.0.2");

        ObjectNode process = root.putObject("process");
        process.put("terminal", false);
        ObjectNode user = process.putObject("user");
        user.put("uid", 0);
        user.put("gid", 0);
        process.putArray("args").add(ContainerPlan.AGENT_PATH).add("serve").add("--fd").add("3");
        process.putArray("env").add("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        process.put("cwd", "/");
        ObjectNode caps = process.putObject("capabilities");
        for (String set : List.of("bounding", "effective", "permitted")) {
            ArrayNode list = caps.putArray(set);
            CAPABILITIES.forEach(list::add);
        }
        caps.putArray("inheritable");
        caps.putArray("ambient");
        ArrayNode rlimits = process.putArray("rlimits");
        rlimit(rlimits, "RLIMIT_NOFILE", 1024, 65536, nofileHardLimit);
        rlimit(rlimits, "RLIMIT_NPROC", plan.pidsLimit(), plan.pidsLimit(), nprocHardLimit);
        process.put("noNewPrivileges", true);

        ObjectNode rootfs = root.putObject("root");
        rootfs.put("path", plan.rootfs().toString());
        rootfs.put("readonly", false);
        root.put("hostname", plan.hostname());

        ArrayNode mounts = root.putArray("mounts");
        mount(mounts, "/proc", "proc", "proc", "nosuid", "noexec", "nodev");
        mount(mounts, "/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=65536k");
        mount(mounts, "/dev/pts", "devpts", "devpts", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620");
        mount(mounts, "/dev/shm", "tmpfs", "shm", "nosuid", "noexec", "nodev", "mode=1777", "size=65536k");
        mount(mounts, "/dev/mqueue", "mqueue", "mqueue", "nosuid", "noexec", "nodev");
        mount(mounts, "/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "ro");
        mount(mounts, ContainerPlan.AGENT_PATH, "bind", plan.agentBinary().toString(), "bind", "ro", "nosuid", "nodev");
        if (plan.toolkitSource() != null) {
            mount(mounts, plan.toolkitPath(), "bind", plan.toolkitSource().toString(), "rbind", "ro", "nosuid", "nodev");
        }

        ObjectNode linux = root.putObject("linux");
        ArrayNode namespaces = linux.putArray("namespaces");
        for (String ns : List.of("pid", "network", "ipc", "uts", "mount", "cgroup")) {
            namespaces.addObject().put("type", ns);
        }
        linux.put("cgroupsPath", plan.cgroupsPath());
        ObjectNode resources = linux.putObject("resources");
        resources.putArray("devices").addObject().put("allow", false).put("access", "rwm");
        resources.putObject("memory").put("limit", plan.memoryBytes());
        ObjectNode cpu = resources.putObject("cpu");
        cpu.put("period", CPU_PERIOD_US);
        cpu.put("quota", Math.max(1000L, Math.round(plan.cpus() * CPU_PERIOD_US)));
        cpu.put("shares", plan.cpuShares());
        resources.putObject("pids").put("limit", plan.pidsLimit());
        ArrayNode masked = linux.putArray("maskedPaths");
        MASKED_PATHS.forEach(masked::add);
        ArrayNode readonly = linux.putArray("readonlyPaths");
        READONLY_PATHS.forEach(readonly::add);
        linux.set("seccomp", SeccompProfile.toOci());
        return root;
    }

    public byte[] configJson(ContainerPlan plan, ObjectMapper mapper) {
        try {
            return mapper.writerWithDefaultPrettyPrinter().writeValueAsBytes(config(plan));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("an OCI config tree always serialises", e);
        }
    }

    private static void rlimit(ArrayNode rlimits, String type, long soft, long hard, long hostHard) {
        long cappedHard = Math.min(hard, hostHard);
        rlimits.addObject().put("type", type).put("soft", Math.min(soft, cappedHard)).put("hard", cappedHard);
    }

    private static void mount(ArrayNode mounts, String destination, String type, String source, String... options) {
        ObjectNode m = mounts.addObject();
        m.put("destination", destination);
        m.put("type", type);
        m.put("source", source);
        ArrayNode opts = m.putArray("options");
        for (String o : options) {
            opts.add(o);
        }
    }
}
