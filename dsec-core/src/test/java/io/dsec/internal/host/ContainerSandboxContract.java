package io.dsec.internal.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ExecResult;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.OciRuntime;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxLaunchException;
import io.dsec.SandboxSpec;
import io.dsec.SandboxState;
import io.dsec.WriteOptions;
import io.dsec.testing.StaticBinaries;
import io.dsec.testing.TestHost;
import io.dsec.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The contract every OCI runtime dsec drives must pass: container sandboxes on the real kernel, runtime and agent
 * (composition, isolation, hardening, cleanup). One subclass per runtime.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ContainerSandboxContract {
    private static final String WORKSPACE_README = "A test workspace for dsec.\n";
    private TestHost t;

    abstract OciRuntime runtime();

    @BeforeAll
    void startHost() {
        t = TestHost.start(runtime());
        assertThat(t.host.backendDescription()).startsWith(runtime().name().toLowerCase(java.util.Locale.ROOT));
    }

    @AfterAll
    void stopHost() {
        if (t != null) {
            t.close();
        }
    }

    private ContainerSandboxHost host() {
        return (ContainerSandboxHost) t.host;
    }

    @Test
    void composesWorkspaceOverBaseAndRunsCommands() {
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("256m").hostname("box").env("GREETING", "hi"))) {
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.exec("cat", "/repo/README").stdoutText()).isEqualTo(WORKSPACE_README);
            // Layers keep file mtimes (tools such as Python compare a cached .pyc with its source's mtime).
            assertThat(sb.exec("stat", "-c", "%Y", "/repo/README").stdoutText().trim()).isEqualTo("946684800");
            assertThat(sb.exec("hostname").stdoutText().trim()).isEqualTo("box");
            assertThat(sb.exec("sh", "-c", "echo $GREETING").stdoutText()).isEqualTo("hi\n");
            assertThat(sb.exec("/opt/dsec/grade.sh").stdoutText()).isEqualTo("graded\n");
            ExecResult missing = sb.exec("no-such-program");
            assertThat(missing.exitCode()).isEqualTo(127);
            assertThat(missing.stderrText()).contains("no-such-program");
        }
    }

    @Test
    void writesGoToThePrivateUpperOnly() {
        try (Sandbox a = t.host.create(SandboxSpec.of(t.image()).memory("128m"));
             Sandbox b = t.host.create(SandboxSpec.of(t.image()).memory("128m"))) {
            a.files().writeString("/repo/README", "changed by a\n");
            a.exec("rm", "/bin/ls");
            assertThat(a.files().readString("/repo/README")).isEqualTo("changed by a\n");
            assertThat(a.exec("ls", "/").exitCode()).isEqualTo(127);
            assertThat(b.files().readString("/repo/README")).isEqualTo(WORKSPACE_README);
            assertThat(b.exec("ls", "/repo").ok()).isTrue();
        }
    }

    @Test
    void toolkitAndAgentCannotBeChangedEvenByRoot() {
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("128m"))) {
            assertThat(sb.exec("sh", "-c", "echo evil > /opt/dsec/grade.sh").exitCode()).isNotZero();
            assertThat(sb.exec("rm", "-f", "/opt/dsec/grade.sh").exitCode()).isNotZero();
            assertThat(sb.exec("mount", "-o", "remount,rw", "/opt/dsec").exitCode()).isNotZero();
            assertThat(sb.exec("umount", "/opt/dsec").exitCode()).isNotZero();
            assertThat(sb.exec("/opt/dsec/grade.sh").stdoutText()).isEqualTo("graded\n");
            assertThatThrownBy(() -> sb.files().writeString("/opt/dsec/grade.sh", "evil"))
                .isInstanceOf(io.dsec.SandboxAccessDeniedException.class);

            assertThat(sb.exec("sh", "-c", "cat /bin/sh > /.dsec/agent").exitCode()).isNotZero();
            assertThat(sb.exec("sh", "-c", "cat /proc/1/mem").exitCode()).isNotZero();
            // The fd numbers may be listed, but no fd of the agent can be followed or opened: its channel is out of reach.
            assertThat(sb.exec("readlink", "/proc/1/fd/3").exitCode()).isNotZero();
            assertThat(sb.exec("sh", "-c", "exec 9<>/proc/1/fd/3").exitCode()).isNotZero();
            assertThat(sb.exec("cat", "/proc/1/environ").exitCode()).isNotZero();
            assertThat(sb.exec("readlink", "/proc/1/exe").exitCode()).isNotZero();
            sb.exec("kill", "-9", "1");
            sb.exec("kill", "-TERM", "1");
            assertThat(sb.exec("echo", "still here").stdoutText()).isEqualTo("still here\n");
        }
    }

    @Test
    void seccompRefusesMountsNamespacesKernelInterfacesAndFileSwaps() throws Exception {
        Path probe = StaticBinaries.probe();
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("128m"))) {
            sb.files().write("/tmp/probe", Files.readAllBytes(probe), WriteOptions.mode(0755));
            ExecResult r = sb.exec("/tmp/probe");
            assertThat(r.exitCode()).as(r.stderrText()).isZero();
            Map<String, String> results = new HashMap<>();
            r.stdoutText().lines().forEach(l -> results.put(l.substring(0, l.indexOf('=')), l.substring(l.indexOf('=') + 1)));
            for (String call : List.of("mount", "umount2", "unshare", "setns", "clone_newuser", "clone_newnet", "bpf", "perf_event_open",
                "keyctl", "add_key", "userfaultfd", "io_uring_setup", "init_module", "finit_module", "kexec_load", "open_by_handle_at",
                "ptrace_attach_1", "ficlone", "ficlone_sign_extended", "ficlonerange", "fideduperange", "xfs_ioc_swapext")) {
                assertThat(results).as(call).containsEntry(call, "EPERM");
            }
            assertThat(results).containsEntry("clone3", "ENOSYS").containsEntry("fork", "OK");
        }
    }

    @Test
    void procIsMaskedNetworkIsLoopbackOnlyAndCapabilitiesAreDropped() {
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("128m"))) {
            for (String masked : List.of("/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/timer_list", "/proc/sched_debug")) {
                ExecResult r = sb.exec("cat", masked);
                assertThat(r.stdout()).as(masked).isEmpty();
            }
            assertThat(sb.exec("sh", "-c", "echo 1 > /proc/sys/kernel/domainname").exitCode()).isNotZero();
            assertThat(sb.exec("sh", "-c", "echo x > /sys/kernel/uevent_helper").exitCode()).isNotZero();
            String netdev = sb.exec("cat", "/proc/net/dev").stdoutText();
            List<String> interfaces = new ArrayList<>();
            netdev.lines().skip(2).forEach(l -> interfaces.add(l.trim().split(":")[0]));
            assertThat(interfaces).containsExactly("lo");
            String capEff = sb.exec("sh", "-c", "grep CapEff /proc/self/status").stdoutText().trim().split("\\s+")[1];
            long caps = Long.parseLong(capEff, 16);
            assertThat(caps & (1L << 21)).as("CAP_SYS_ADMIN").isZero();
            assertThat(caps & (1L << 19)).as("CAP_SYS_PTRACE").isZero();
            assertThat(caps & (1L << 16)).as("CAP_SYS_MODULE").isZero();
            assertThat(caps & (1L << 27)).as("CAP_MKNOD").isZero();
            assertThat(caps & (1L << 13)).as("CAP_NET_RAW").isZero();
            assertThat(sb.exec("grep", "NoNewPrivs", "/proc/self/status").stdoutText()).contains("1");
            assertThat(sb.exec("mknod", "/tmp/dev", "c", "1", "1").exitCode()).isNotZero();
        }
    }

    @Test
    void cgroupLimitsAreAppliedAndRemovedOnClose() throws Exception {
        Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("96m").cpus(0.5).pids(64));
        List<Path> dirs = host().cgroups().cgroupDirs("/dsec/" + sb.id());
        Path memoryLimit = dirs.stream().map(d -> d.resolve("memory.limit_in_bytes")).filter(Files::exists).findFirst()
            .orElseGet(() -> dirs.stream().map(d -> d.resolve("memory.max")).filter(Files::exists).findFirst().orElseThrow());
        assertThat(Files.readString(memoryLimit).trim()).isEqualTo(String.valueOf(96L << 20));
        Path pidsMax = dirs.stream().map(d -> d.resolve("pids.max")).filter(Files::exists).findFirst().orElseThrow();
        assertThat(Files.readString(pidsMax).trim()).isEqualTo("64");
        sb.close();
        assertThat(dirs).allSatisfy(d -> assertThat(d).doesNotExist());
    }

    @Test
    void cpuClassesSetTheCgroupWeightAndChangeOnARunningSandbox() throws Exception {
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("64m").cpuClass(io.dsec.CpuClass.LATENCY_SENSITIVE))) {
            List<Path> dirs = host().cgroups().cgroupDirs("/dsec/" + sb.id());
            assertThat(cpuWeight(dirs)).isEqualTo("10240");
            sb.cpuClass(io.dsec.CpuClass.BATCH);
            assertThat(sb.cpuClass()).isEqualTo(io.dsec.CpuClass.BATCH);
            assertThat(cpuWeight(dirs)).isEqualTo("2");
            sb.cpuClass(io.dsec.CpuClass.NORMAL);
            assertThat(cpuWeight(dirs)).isEqualTo("1024");
            assertThat(sb.exec("true").ok()).isTrue();
            sb.close();
            assertThatThrownBy(() -> sb.cpuClass(io.dsec.CpuClass.BATCH)).isInstanceOf(SandboxClosedException.class);
        }
    }

    /** cpu.shares (v1) as written, or the v2 cpu.weight mapped back to shares. */
    private static String cpuWeight(List<Path> dirs) throws Exception {
        for (Path d : dirs) {
            if (Files.exists(d.resolve("cpu.shares"))) {
                return Files.readString(d.resolve("cpu.shares")).trim();
            }
        }
        for (Path d : dirs) {
            if (Files.exists(d.resolve("cpu.weight"))) {
                return switch (Files.readString(d.resolve("cpu.weight")).trim()) {
                    case "10000" -> "10240";
                    case "100" -> "1024";
                    case "1" -> "2";
                    default -> "weight " + Files.readString(d.resolve("cpu.weight")).trim();
                };
            }
        }
        throw new AssertionError("no cpu controller in " + dirs);
    }

    @Test
    void aSandboxOverItsMemoryLimitIsKilledInsideItsOwnCgroup() {
        try (Sandbox greedy = t.host.create(SandboxSpec.of(t.image()).memory("32m"));
             Sandbox neighbour = t.host.create(SandboxSpec.of(t.image()).memory("64m"))) {
            // Commands are the OOM killer's first choice in their cgroup, never the agent.
            assertThat(greedy.exec("cat", "/proc/self/oom_score_adj").stdoutText().trim()).isEqualTo("500");
            // A shell variable of ~200 MB: far over the 32 MiB limit.
            ExecResult r = greedy.exec("sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}");
            assertThat(r.signal()).as("killed by the OOM killer of its own cgroup: %s", r).isEqualTo(9);
            assertThat(greedy.exec("echo", "alive").stdoutText()).as("the agent survives").isEqualTo("alive\n");
            assertThat(neighbour.exec("echo", "unaffected").stdoutText()).isEqualTo("unaffected\n");
        }
    }

    @Test
    void closeRemovesEverythingAndIsIdempotent() throws Exception {
        Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("128m"));
        Path dir = ((ContainerSandbox) sb).dir();
        assertThat(host().runtime().list()).contains(sb.id());
        sb.close();
        sb.close();
        assertThat(sb.state()).isEqualTo(SandboxState.CLOSED);
        assertThat(dir).doesNotExist();
        assertThat(host().runtime().list()).doesNotContain(sb.id());
        assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain(dir.toString());
        assertThat(t.host.sandbox(sb.id())).isEmpty();
        assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxClosedException.class).hasMessageContaining(sb.id());
        assertThatThrownBy(() -> sb.files().read("/etc/passwd")).isInstanceOf(SandboxClosedException.class);
    }

    @Test
    void aFailedCreateLeavesNothingBehind() throws Exception {
        // A base whose /opt/dsec is a file: the runtime cannot mount the toolkit there and fails after the root is mounted.
        Path src = TestImages.busyboxRootfs(t.dir.resolve("src/broken-base"));
        Files.createDirectories(src.resolve("opt"));
        Files.writeString(src.resolve("opt/dsec"), "not a directory");
        Layer broken = t.host.layers().fromDirectory(LayerKind.BASE, "broken:1", src);
        String mountsBefore = Files.readString(Path.of("/proc/self/mountinfo"));
        List<String> containersBefore = host().runtime().list();
        try (var dirs = Files.list(t.host.stateDir().resolve("sandboxes"))) {
            assertThat(dirs.count()).isZero();
        }
        assertThatThrownBy(() -> t.host.create(SandboxSpec.of(Image.of(broken, null, t.toolkit))))
            .isInstanceOf(SandboxLaunchException.class)
            .hasMessageContaining("opt/dsec");
        assertThat(Files.readString(Path.of("/proc/self/mountinfo")).lines().count()).isEqualTo(mountsBefore.lines().count());
        assertThat(host().runtime().list()).isEqualTo(containersBefore);
        try (var dirs = Files.list(t.host.stateDir().resolve("sandboxes"))) {
            assertThat(dirs.count()).isZero();
        }
    }

    @Test
    void createsManySandboxesInParallel() {
        List<CompletableFuture<Sandbox>> futures = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            futures.add(t.host.createAsync(SandboxSpec.of(t.image()).memory("64m")));
        }
        List<Sandbox> created = new ArrayList<>();
        try {
            for (CompletableFuture<Sandbox> f : futures) {
                created.add(f.join());
            }
            assertThat(created.stream().map(Sandbox::id).distinct()).hasSize(8);
            for (Sandbox sb : created) {
                assertThat(sb.exec("cat", "/repo/README").stdoutText()).isEqualTo(WORKSPACE_README);
            }
            assertThat(t.host.sandboxes()).hasSizeGreaterThanOrEqualTo(8);
        } finally {
            created.forEach(Sandbox::close);
        }
    }

    @Test
    void aSecondHostOnTheSameStateDirIsRefused() {
        assertThatThrownBy(() -> io.dsec.Sandboxes.builder().stateDir(t.host.stateDir()).runtime(runtime()).build())
            .isInstanceOf(io.dsec.DsecException.class)
            .hasMessageContaining("another SandboxHost").hasMessageContaining(t.host.stateDir().toString());
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("64m"))) {
            assertThat(sb.exec("true").ok()).as("the first host is unharmed").isTrue();
        }
    }

    @Test
    void sandboxProcessesAreNotChildrenOfTheJvm() throws Exception {
        try (Sandbox sb = t.host.create(SandboxSpec.of(t.image()).memory("64m"))) {
            int pid = host().runtime().state(sb.id()).get("pid").asInt();
            String status = Files.readString(Path.of("/proc/" + pid + "/status"));
            long ppid = Long.parseLong(status.lines().filter(l -> l.startsWith("PPid:")).findFirst().orElseThrow().split("\\s+")[1]);
            assertThat(ppid).isNotEqualTo(ProcessHandle.current().pid());
            assertThat(ProcessHandle.current().descendants().map(ProcessHandle::pid)).doesNotContain((long) pid);
        }
    }
}
