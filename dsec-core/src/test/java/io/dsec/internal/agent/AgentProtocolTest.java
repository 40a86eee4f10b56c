package io.dsec.internal.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.testing.Capabilities;

/** Raw frames against the agent, the launch mode and the agent's hardening. */
class AgentProtocolTest {
    private AgentProcess agent;

    @BeforeEach
    void startAgent() {
        agent = AgentProcess.start();
    }

    @AfterEach
    void stopAgent() {
        agent.close();
    }

    private SocketChannel raw() throws IOException {
        AgentProcess.await("the agent socket", Duration.ofSeconds(30), () -> Files.exists(agent.socket));
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(agent.socket));
        return ch;
    }

    private static void send(SocketChannel ch, int length, int type, int id, byte[] payload) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(9 + payload.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(length).put((byte) type).putInt(id).put(payload).flip();
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Returns {type, id} of the next frame; its payload is skipped. */
    private static int[] receive(SocketChannel ch) throws IOException {
        ByteBuffer len = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        readFully(ch, len);
        ByteBuffer body = ByteBuffer.allocate(len.flip().getInt()).order(ByteOrder.LITTLE_ENDIAN);
        readFully(ch, body);
        body.flip();
        return new int[] {body.get() & 0xFF, body.getInt()};
    }

    private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new IOException("closed");
            }
        }
    }

    @Test
    void unknownTypeGetsAnErrorAndTheConnectionStays() throws Exception {
        try (SocketChannel ch = raw()) {
            send(ch, 5, 0x7F, 9, new byte[0]);
            assertThat(receive(ch)).containsExactly(Protocol.R_ERROR, 9);
            send(ch, 5 + 2, Protocol.T_READ, 10, new byte[] {1, 2});  // truncated payload
            assertThat(receive(ch)).containsExactly(Protocol.R_ERROR, 10);
            send(ch, 5, Protocol.T_PING, 11, new byte[0]);
            assertThat(receive(ch)).containsExactly(Protocol.R_PONG, 11);
        }
    }

    @Test
    void oversizedFrameClosesOnlyThatConnection() throws Exception {
        try (SocketChannel bad = raw(); SocketChannel good = raw()) {
            send(bad, (4 << 20) + 1, Protocol.T_PING, 1, new byte[0]);
            ByteBuffer b = ByteBuffer.allocate(16);
            int n;
            do {
                n = bad.read(b);
                b.clear();
            } while (n > 0);
            assertThat(n).isEqualTo(-1);
            send(good, 5, Protocol.T_PING, 2, new byte[0]);
            assertThat(receive(good)).containsExactly(Protocol.R_PONG, 2);
        }
    }

    @Test
    void socketIsPrivate() throws Exception {
        AgentProcess.await("the agent socket", Duration.ofSeconds(30), () -> Files.exists(agent.socket));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(agent.socket))).isEqualTo("rw-------");
    }

    @Test
    void versionMode() throws Exception {
        Process p = new ProcessBuilder(AgentProcess.binary().toString(), "version").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        assertThat(out).startsWith("dsec-agent ").contains("protocol 1");
    }

    @Test
    void launchPassesTheListeningSocketAsFd3() throws Exception {
        Path sock = agent.dir.resolve("launch.sock");
        Process p = new ProcessBuilder(AgentProcess.binary().toString(), "launch", "--socket", sock.toString(), "--",
            "sh", "-c", "ls -l /proc/self/fd/3").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("socket:[");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(sock))).isEqualTo("rw-------");
    }

    @Test
    void launchThenServeOnFd3() throws Exception {
        Path sock = agent.dir.resolve("launch2.sock");
        Process p = new ProcessBuilder(AgentProcess.binary().toString(), "launch", "--socket", sock.toString(), "--",
            AgentProcess.binary().toString(), "serve", "--fd", "3").redirectErrorStream(true)
            .redirectOutput(agent.dir.resolve("launch2.log").toFile()).start();
        try (AgentIo io = new AgentIo()) {
            AgentConnection c = AgentConnection.connect(io, sock, Duration.ofSeconds(30));
            assertThat((long) c.agentPid()).isEqualTo(p.pid());
            ExecResult r = c.exec(Exec.of("sh", "-c", "ls /proc/self/fd"), Map.of(), "/").get(30, TimeUnit.SECONDS);
            assertThat(r.stdoutText().lines()).as("an exec inherits only stdio").containsExactlyInAnyOrder("0", "1", "2", "3");
        } finally {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void launchFailsWith125() throws Exception {
        Process p = new ProcessBuilder(AgentProcess.binary().toString(), "launch", "--socket", "/dsec-no-such-dir/s.sock", "--",
            "true").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isEqualTo(125);
        assertThat(out).startsWith("dsec-agent launch: bind: ");
    }

    /** A non-dumpable process's /proc files belong to root; run an agent as nobody to see it. */
    @Test
    void serveIsNotDumpable() throws Exception {
        Capabilities.requireRoot();
        Path dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-dump");
        try (AgentIo io = new AgentIo()) {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
            Path bin = dir.resolve("dsec-agent");
            Files.copy(AgentProcess.binary(), bin);
            Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwxr-xr-x"));
            AgentConnection c = agent.connect(io);
            AgentConnection.RunningExec nobody = c.start(Exec.of(bin.toString(), "serve", "--listen", dir.resolve("n.sock").toString())
                .user(65534, 65534), Map.of(), "/");
            int pid = nobody.pid().get(30, TimeUnit.SECONDS);
            AgentConnection c2 = AgentConnection.connect(io, dir.resolve("n.sock"), Duration.ofSeconds(30));
            assertThat(c2.agentPid()).isEqualTo(pid);
            String status = Files.readString(Path.of("/proc/" + pid + "/status"));
            assertThat(status).containsPattern("Uid:\\s+65534");
            assertThat(Files.getAttribute(Path.of("/proc/" + pid + "/environ"), "unix:uid")).isEqualTo(0);
            // The inner agent's own exec (as nobody) cannot read its memory maps.
            ExecResult r = c2.exec(Exec.shell("cat /proc/" + pid + "/environ > /dev/null && echo readable").user(65534, 65534),
                Map.of(), "/").get(30, TimeUnit.SECONDS);
            assertThat(r.stdoutText()).doesNotContain("readable");
            assertThat(r.stderrText()).contains("Permission denied");
            c2.close();
            nobody.signal(9).get(30, TimeUnit.SECONDS);
            assertThat(nobody.result().get(30, TimeUnit.SECONDS).signal()).isEqualTo(9);
        } finally {
            AgentProcess.deleteTree(dir);
        }
    }

    @Test
    void idleConnectionsAreSmall() throws Exception {
        // Not a benchmark: checks that 200 idle connections share one IO thread.
        try (AgentIo io = new AgentIo()) {
            int threads = Thread.activeCount();
            AgentConnection[] cs = new AgentConnection[200];
            for (int i = 0; i < cs.length; i++) {
                cs[i] = agent.connect(io);
            }
            assertThat(io.connectionCount()).isEqualTo(200);
            assertThat(Thread.activeCount()).isLessThan(threads + 10);
            for (AgentConnection c : cs) {
                c.ping().get(30, TimeUnit.SECONDS);
                c.close();
            }
            assertThat(io.connectionCount()).isZero();
        }
    }
}
