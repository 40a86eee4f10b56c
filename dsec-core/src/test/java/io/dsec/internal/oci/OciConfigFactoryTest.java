package io.dsec.internal.oci;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OciConfigFactoryTest {
    private final ContainerPlan plan = new ContainerPlan("sb-1", Path.of("/state/sb-1/rootfs"), "box", Path.of("/state/agent/dsec-agent-1"),
        Path.of("/state/mounts/abc"), "/opt/dsec", 2L << 30, 1.5, 512, "/dsec/sb-1", 10240);

    private JsonNode config() throws Exception {
        return new ObjectMapper().readTree(new OciConfigFactory(4096, 100_000).configJson(plan, new ObjectMapper()));
    }

    private static List<String> texts(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    @Test
    void startsTheAgentWithTheInheritedSocket() throws Exception {
        JsonNode c = config();
        assertThat(texts(c.at("/process/args"))).containsExactly("/.dsec/agent", "serve", "--fd", "3");
        assertThat(c.at("/process/noNewPrivileges").asBoolean()).isTrue();
        assertThat(c.at("/root/path").asText()).isEqualTo("/state/sb-1/rootfs");
        assertThat(c.at("/hostname").asText()).isEqualTo("box");
    }

    @Test
    void dropsDangerousCapabilities() throws Exception {
        JsonNode caps = config().at("/process/capabilities");
        for (String set : List.of("bounding", "effective", "permitted")) {
            assertThat(texts(caps.get(set))).doesNotContain("CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_SYS_MODULE", "CAP_MKNOD",
                "CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_SYS_RESOURCE", "CAP_SYS_CHROOT", "CAP_DAC_READ_SEARCH");
        }
        assertThat(caps.get("ambient")).isEmpty();
    }

    @Test
    void isolatesNamespacesAndHasNoNetworkByDefault() throws Exception {
        JsonNode ns = config().at("/linux/namespaces");
        List<String> types = new ArrayList<>();
        ns.forEach(n -> types.add(n.get("type").asText()));
        assertThat(types).contains("pid", "network", "ipc", "uts", "mount");
        ns.forEach(n -> assertThat(n.has("path")).as("a fresh namespace, not joined").isFalse());
    }

    @Test
    void masksProcAndSys() throws Exception {
        JsonNode c = config();
        assertThat(texts(c.at("/linux/maskedPaths"))).contains("/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/kpagecgroup",
            "/proc/kpageflags", "/proc/kpagecount", "/proc/sched_debug", "/proc/timer_list");
        assertThat(texts(c.at("/linux/readonlyPaths"))).contains("/proc/sys");
        boolean sysReadOnly = false;
        for (JsonNode m : c.at("/mounts")) {
            if (m.get("destination").asText().equals("/sys")) {
                sysReadOnly = texts(m.get("options")).contains("ro");
            }
        }
        assertThat(sysReadOnly).isTrue();
    }

    @Test
    void mountsAgentAndToolkitReadOnly() throws Exception {
        JsonNode c = config();
        List<String> agentOpts = null;
        List<String> toolkitOpts = null;
        for (JsonNode m : c.at("/mounts")) {
            if (m.get("destination").asText().equals("/.dsec/agent")) {
                agentOpts = texts(m.get("options"));
                assertThat(m.get("source").asText()).isEqualTo("/state/agent/dsec-agent-1");
            }
            if (m.get("destination").asText().equals("/opt/dsec")) {
                toolkitOpts = texts(m.get("options"));
                assertThat(m.get("source").asText()).isEqualTo("/state/mounts/abc");
            }
        }
        assertThat(agentOpts).contains("ro");
        assertThat(toolkitOpts).contains("ro");
    }

    @Test
    void limitsResourcesAndKeepsRlimitsUnderTheHostsHardLimit() throws Exception {
        JsonNode c = config();
        assertThat(c.at("/linux/resources/memory/limit").asLong()).isEqualTo(2L << 30);
        assertThat(c.at("/linux/resources/cpu/quota").asLong()).isEqualTo(150_000);
        assertThat(c.at("/linux/resources/cpu/period").asLong()).isEqualTo(100_000);
        assertThat(c.at("/linux/resources/cpu/shares").asLong()).isEqualTo(10240);
        assertThat(c.at("/linux/resources/pids/limit").asLong()).isEqualTo(512);
        assertThat(c.at("/linux/cgroupsPath").asText()).isEqualTo("/dsec/sb-1");
        for (JsonNode r : c.at("/process/rlimits")) {
            if (r.get("type").asText().equals("RLIMIT_NOFILE")) {
                assertThat(r.get("hard").asLong()).isEqualTo(4096);
                assertThat(r.get("soft").asLong()).isEqualTo(1024);
            }
        }
    }

    @Test
    void seccompRefusesMountsNamespacesAndFileSwaps() throws Exception {
        JsonNode seccomp = config().at("/linux/seccomp");
        assertThat(seccomp.get("defaultAction").asText()).isEqualTo("SCMP_ACT_ALLOW");
        List<String> denied = new ArrayList<>();
        List<Long> ioctls = new ArrayList<>();
        int cloneRules = 0;
        for (JsonNode rule : seccomp.get("syscalls")) {
            List<String> names = texts(rule.get("names"));
            if (!rule.has("args")) {
                denied.addAll(names);
            } else if (names.contains("ioctl")) {
                JsonNode arg = rule.get("args").get(0);
                assertThat(arg.get("index").asInt()).isEqualTo(1);
                assertThat(arg.get("op").asText()).isEqualTo("SCMP_CMP_MASKED_EQ");
                ioctls.add(arg.get("valueTwo").asLong());
            } else if (names.contains("clone")) {
                cloneRules++;
            }
        }
        assertThat(denied).contains("mount", "umount2", "unshare", "setns", "bpf", "perf_event_open", "add_key", "keyctl",
            "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
            "delete_module", "kexec_load", "kexec_file_load", "open_by_handle_at", "clone3");
        assertThat(ioctls).containsExactlyInAnyOrder(0xC0C0586DL, 0x40049409L, 0x4020940DL, 0xC0189436L);
        assertThat(cloneRules).isEqualTo(SeccompProfile.NAMESPACE_FLAGS.size());
    }
}
