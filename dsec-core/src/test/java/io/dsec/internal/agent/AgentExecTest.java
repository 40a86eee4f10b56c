package io.dsec.internal.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.dsec.AgentException;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.testing.Capabilities;

class AgentExecTest {
    private static AgentIo io;
    private AgentProcess agent;
    private AgentConnection conn;
    private final List<Long> strays = new ArrayList<>();

    @BeforeAll
    static void startIo() {
        io = new AgentIo();
    }

    @AfterAll
    static void stopIo() {
        io.close();
    }

    @BeforeEach
    void startAgent() {
        agent = AgentProcess.start();
        conn = agent.connect(io);
    }

    @AfterEach
    void stopAgent() {
        for (long pid : strays) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        if (conn != null) {
            conn.close();
        }
        agent.close();
    }

    private ExecResult run(Exec exec) throws Exception {
        return conn.exec(exec, Map.of(), "/").get(60, TimeUnit.SECONDS);
    }

    private static int uid() throws IOException {
        return Integer.parseInt(Files.readString(Path.of("/proc/self/status")).lines().filter(l -> l.startsWith("Uid:"))
            .findFirst().orElseThrow().split("\\s+")[1]);
    }

    /** An exec as the current user (so the tests also run without root). */
    private static Exec as(Exec e) throws IOException {
        int id = uid();
        return e.user(id, id == 0 ? 0 : (int) Files.getAttribute(Path.of("/proc/self"), "unix:gid"));
    }

    @Test
    void helloAndPing() throws Exception {
        assertThat(conn.hello().protocolVersion()).isEqualTo(1);
        assertThat((long) conn.agentPid()).isEqualTo(agent.process.pid());
        assertThat(conn.hello().version()).isNotEmpty();
        conn.ping().get(30, TimeUnit.SECONDS);
        assertThat(conn.isOpen()).isTrue();
    }

    @Test
    void echoWritesStdout() throws Exception {
        ExecResult r = run(as(Exec.of("echo", "hi")));
        assertThat(r.exitCode()).isZero();
        assertThat(r.signal()).isZero();
        assertThat(r.ok()).isTrue();
        assertThat(r.stdoutText()).isEqualTo("hi\n");
        assertThat(r.stderr()).isEmpty();
        assertThat(r.duration()).isPositive();
    }

    @Test
    void stderrAndExitCode() throws Exception {
        ExecResult r = run(as(Exec.shell("echo out; echo oops >&2; exit 3")));
        assertThat(r.exitCode()).isEqualTo(3);
        assertThat(r.stdoutText()).isEqualTo("out\n");
        assertThat(r.stderrText()).isEqualTo("oops\n");
        assertThat(r.ok()).isFalse();
    }

    @Test
    void missingCommandIs127WithMessage() throws Exception {
        ExecResult r = run(as(Exec.of("dsec-no-such-command", "x")));
        assertThat(r.exitCode()).isEqualTo(127);
        assertThat(r.stderrText()).contains("dsec: dsec-no-such-command:").contains("No such file or directory");
    }

    @Test
    void notExecutableIs126() throws Exception {
        Path file = agent.dir.resolve("data.txt");
        Files.writeString(file, "not a program");
        ExecResult r = run(as(Exec.of(file.toString())));
        assertThat(r.exitCode()).isEqualTo(126);
        assertThat(r.stderrText()).startsWith("dsec: " + file + ":").contains("Permission denied");
    }

    @Test
    void badWorkdirIs126() throws Exception {
        ExecResult r = run(as(Exec.of("true").workdir("/dsec-no-such-dir")));
        assertThat(r.exitCode()).isEqualTo(126);
        assertThat(r.stderrText()).contains("chdir /dsec-no-such-dir");
    }

    @Test
    void killedBySignal() throws Exception {
        ExecResult r = run(as(Exec.shell("kill -9 $$")));
        assertThat(r.signal()).isEqualTo(9);
        assertThat(r.exitCode()).isEqualTo(137);
        assertThat(r.timedOut()).isFalse();
    }

    @Test
    void timeoutKillsTheWholeGroup() throws Exception {
        Path pidFile = agent.dir.resolve("bg.pid");
        ExecResult r = run(as(Exec.shell("sleep 60 & echo $! > " + pidFile + "; wait")).timeout(Duration.ofMillis(300)));
        assertThat(r.timedOut()).isTrue();
        assertThat(r.signal()).isEqualTo(9);
        assertThat(r.exitCode()).isEqualTo(137);
        long bg = Long.parseLong(Files.readString(pidFile).trim());
        strays.add(bg);
        AgentProcess.await("the background sleep to die", Duration.ofSeconds(30), () -> AgentProcess.gone(bg));
    }

    @Test
    void signalRequestReachesTheGroup() throws Exception {
        AgentConnection.RunningExec running = conn.start(as(Exec.of("sleep", "60")), Map.of(), "/");
        running.pid().get(30, TimeUnit.SECONDS);
        running.signal(15).get(30, TimeUnit.SECONDS);
        ExecResult r = running.result().get(30, TimeUnit.SECONDS);
        assertThat(r.signal()).isEqualTo(15);
        assertThat(r.timedOut()).isFalse();
    }

    @Test
    void outputCapKeepsHeadAndTailAndCountsDropped() throws Exception {
        byte[] all = IntStream.rangeClosed(1, 100_000).mapToObj(i -> i + "\n").collect(Collectors.joining())
            .getBytes(StandardCharsets.US_ASCII);
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        ExecResult r = run(as(Exec.of("seq", "1", "100000")).maxOutputBytes(1000).onStdout(lines::add));
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdoutDroppedBytes()).isEqualTo(all.length - 1000);
        assertThat(r.stdout()).hasSize(1000);
        byte[] expected = new byte[1000];
        System.arraycopy(all, 0, expected, 0, 500);
        System.arraycopy(all, all.length - 500, expected, 500, 500);
        assertThat(r.stdout()).isEqualTo(expected);
        assertThat(r.stderrDroppedBytes()).isZero();
        // Lines: the head's lines, then the tail's; a line cut by the gap is delivered in its two parts.
        List<String> expectedLines = new ArrayList<>(splitLines(new String(expected, 0, 500, StandardCharsets.US_ASCII)));
        expectedLines.addAll(splitLines(new String(expected, 500, 500, StandardCharsets.US_ASCII)));
        assertThat(lines).containsExactlyElementsOf(expectedLines);
        assertThat(lines.get(0)).isEqualTo("1");
        assertThat(lines.get(lines.size() - 1)).isEqualTo("100000");
    }

    private static List<String> splitLines(String s) {
        List<String> out = new ArrayList<>(List.of(s.split("\n", -1)));
        if (out.get(out.size() - 1).isEmpty()) {
            out.remove(out.size() - 1);
        }
        return out;
    }

    @Test
    void outputUnderTheCapIsKeptWhole() throws Exception {
        ExecResult r = run(as(Exec.shell("head -c 300000 /dev/zero")).maxOutputBytes(1 << 20));
        assertThat(r.stdout()).hasSize(300_000);
        assertThat(r.stdoutDroppedBytes()).isZero();
    }

    @Test
    void lineCallbacksArriveInOrder() throws Exception {
        List<String> out = Collections.synchronizedList(new ArrayList<>());
        List<String> err = Collections.synchronizedList(new ArrayList<>());
        ExecResult r = run(as(Exec.shell("seq 1 20000; printf 'e1\\ne2\\npartial' >&2"))
            .onStdout(line -> {
                out.add(line);
            })
            .onStderr(err::add));
        assertThat(r.exitCode()).isZero();
        assertThat(out).hasSize(20000);
        for (int i = 0; i < 20000; i++) {
            assertThat(out.get(i)).isEqualTo(Integer.toString(i + 1));
        }
        assertThat(err).containsExactly("e1", "e2", "partial");
    }

    @Test
    void futureCompletesAfterSlowCallbacks() throws Exception {
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        ExecResult r = run(as(Exec.shell("echo a; echo b; echo c")).onStdout(line -> {
            try {
                Thread.sleep(50);  // a slow callback, not synchronisation
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            seen.add(line);
        }));
        assertThat(r.exitCode()).isZero();
        assertThat(seen).containsExactly("a", "b", "c");
    }

    @Test
    void stdinIsFed() throws Exception {
        ExecResult r = run(as(Exec.of("cat")).stdin("hello\nworld"));
        assertThat(r.stdoutText()).isEqualTo("hello\nworld");
        byte[] big = new byte[3 << 20];
        new java.util.Random(1).nextBytes(big);
        ExecResult r2 = run(as(Exec.of("wc", "-c")).stdin(big));
        assertThat(r2.stdoutText().trim()).isEqualTo(Integer.toString(big.length));
        ExecResult r3 = run(as(Exec.of("cat")));
        assertThat(r3.stdout()).isEmpty();
        assertThat(r3.exitCode()).isZero();
    }

    @Test
    void envAndWorkdir() throws Exception {
        Path dir = agent.dir.resolve("work");
        Files.createDirectories(dir);
        ExecResult r = conn.exec(as(Exec.shell("echo $FOO $BASE $HOME; pwd; echo $PATH").env("FOO", "bar")),
            Map.of("BASE", "base", "FOO", "overridden"), dir.toString()).get(60, TimeUnit.SECONDS);
        assertThat(r.stdoutText().lines()).containsExactly("bar base /root", dir.toString(), AgentConnection.DEFAULT_PATH);
        ExecResult r2 = conn.exec(as(Exec.of("pwd").workdir("/tmp").env("HOME", "/home/x")), Map.of(), dir.toString())
            .get(60, TimeUnit.SECONDS);
        assertThat(r2.stdoutText()).isEqualTo("/tmp\n");
        ExecResult r3 = conn.exec(as(Exec.of("env")), Map.of("PATH", "/bin:/usr/bin"), "/").get(60, TimeUnit.SECONDS);
        assertThat(r3.stdoutText().lines()).containsExactlyInAnyOrder("PATH=/bin:/usr/bin", "HOME=/root");
    }

    @Test
    void runsAsTheGivenUser() throws Exception {
        Capabilities.requireRoot();
        ExecResult r = run(Exec.shell("id -u; id -g; id -G").user(1000, 1001));
        assertThat(r.stdoutText().lines()).containsExactly("1000", "1001", "1001");
        ExecResult root = run(Exec.of("id", "-u"));
        assertThat(root.stdoutText()).isEqualTo("0\n");
    }

    @Test
    void twoHundredConcurrentExecs() throws Exception {
        List<CompletableFuture<ExecResult>> futures = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            futures.add(conn.exec(as(Exec.of("/bin/sh", "-c", "echo $0; echo err$0 >&2", "n" + i)), Map.of(), "/"));
        }
        CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).get(120, TimeUnit.SECONDS);
        for (int i = 0; i < 200; i++) {
            ExecResult r = futures.get(i).get();
            assertThat(r.exitCode()).isZero();
            assertThat(r.stdoutText()).isEqualTo("n" + i + "\n");
            assertThat(r.stderrText()).isEqualTo("errn" + i + "\n");
        }
    }

    @Test
    void bigOutputArrivesWhole() throws Exception {
        ExecResult r = run(as(Exec.shell("head -c 20000000 /dev/zero | tr '\\0' x")).maxOutputBytes(64L << 20));
        assertThat(r.stdout()).hasSize(20_000_000);
        assertThat(r.stdoutDroppedBytes()).isZero();
    }

    @Test
    void processClosingStdoutEarly() throws Exception {
        ExecResult r = run(as(Exec.shell("exec >&-; echo still >&2; sleep 0.2; exit 4")));
        assertThat(r.exitCode()).isEqualTo(4);
        assertThat(r.stderrText()).isEqualTo("still\n");
    }

    @Test
    void grandchildHoldingStdoutDoesNotHangExit() throws Exception {
        ExecResult r = run(as(Exec.shell("setsid sleep 60 & echo $!; echo done")));
        strays.add(Long.parseLong(r.stdoutText().lines().findFirst().orElseThrow()));
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdoutText()).endsWith("done\n");
    }

    @Test
    void closingTheConnectionFailsRunningExecsAndTheAgentStaysUp() throws Exception {
        AgentConnection.RunningExec running = conn.start(as(Exec.of("sleep", "60")), Map.of(), "/");
        long pid = running.pid().get(30, TimeUnit.SECONDS);
        strays.add(pid);
        conn.close();
        conn.close();
        assertThat(conn.isOpen()).isFalse();
        assertThatThrownBy(() -> running.result().get(30, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(AgentException.class);
        assertThatThrownBy(() -> conn.ping().get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(AgentException.class);
        long instance = conn.hello().instanceId();

        conn = agent.connect(io);
        assertThat(conn.hello().instanceId()).isEqualTo(instance);
        conn.ping().get(30, TimeUnit.SECONDS);
        assertThat(run(as(Exec.of("echo", "again"))).stdoutText()).isEqualTo("again\n");
        assertThat(AgentProcess.gone(pid)).isFalse();
    }

    @Test
    void agentDeathFailsCallsAndTellsListeners() throws Exception {
        CompletableFuture<AgentException> closed = new CompletableFuture<>();
        AgentConnection c = conn;
        c.onClose(() -> closed.complete(c.closeCause()));
        AgentConnection.RunningExec started = conn.start(as(Exec.of("sleep", "60")), Map.of(), "/");
        strays.add((long) started.pid().get(30, TimeUnit.SECONDS));
        CompletableFuture<ExecResult> running = started.result();
        agent.process.destroyForcibly();
        assertThat(closed.get(30, TimeUnit.SECONDS)).isNotNull().hasMessageContaining(agent.socket.toString());
        assertThatThrownBy(() -> running.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(AgentException.class);
        assertThat(c.isOpen()).isFalse();
    }

    @Test
    void sigtermFromTheParentForwardsAndExits() throws Exception {
        AgentConnection.RunningExec running = conn.start(as(Exec.of("sleep", "60")), Map.of(), "/");
        running.pid().get(30, TimeUnit.SECONDS);
        agent.process.destroy();  // SIGTERM from the agent's parent
        ExecResult r = running.result().get(30, TimeUnit.SECONDS);
        assertThat(r.signal()).isEqualTo(15);
        assertThat(agent.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(agent.process.exitValue()).isZero();
    }

    @Test
    void signalsFromInsideAreIgnored() throws Exception {
        ExecResult r = run(as(Exec.shell("kill -TERM " + agent.process.pid() + "; kill -USR1 " + agent.process.pid()
            + "; echo sent")));
        assertThat(r.stdoutText()).isEqualTo("sent\n");
        conn.ping().get(30, TimeUnit.SECONDS);
        assertThat(agent.process.isAlive()).isTrue();
    }
}
