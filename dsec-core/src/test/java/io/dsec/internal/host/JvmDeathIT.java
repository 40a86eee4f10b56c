package io.dsec.internal.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.Exec;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.agent.AgentIo;
import io.dsec.testing.Capabilities;
import io.dsec.testing.HoldSandboxMain;
import io.dsec.testing.TestHost;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A sandbox keeps running, with its files and its agent, when the JVM that made it is SIGKILLed. */
class JvmDeathIT {
    private Path dir;
    private Process child;

    @AfterEach
    void cleanUp() {
        if (child != null) {
            child.destroyForcibly();
        }
        if (dir != null) {
            TestHost.lastResortCleanup(dir);
        }
    }

    @Test
    void sandboxOutlivesAKilledJvm() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), HoldSandboxMain.class.getName(), dir.toString())
            .redirectError(dir.resolve("child.log").toFile())
            .start();
        String id = null;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith("READY ")) {
                    id = line.substring(6).trim();
                    break;
                }
            }
        }
        assertThat(id).as("child JVM output; its log: %s", dir.resolve("child.log")).isNotNull();

        child.destroyForcibly();
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(child.exitValue()).isEqualTo(128 + 9);

        String runtime = List.of("crun", "runc").stream().filter(r -> Files.isDirectory(dir.resolve("state/runtime/" + r)))
            .findFirst().orElseThrow();
        Process state = new ProcessBuilder(runtime, "--root", dir.resolve("state/runtime/" + runtime).toString(), "state", id)
            .redirectErrorStream(true).start();
        String stateJson = new String(state.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        state.waitFor(30, TimeUnit.SECONDS);
        assertThat(stateJson).contains("\"running\"");

        Path socket = dir.resolve("state/sandboxes/" + id + "/agent.sock");
        try (AgentIo io = new AgentIo(); AgentConnection again = AgentConnection.connect(io, socket, Duration.ofSeconds(10))) {
            assertThat(again.exec(Exec.of("cat", "/tmp/marker"), Map.of(), "/").join().stdoutText()).isEqualTo("alive\n");
        }
    }
}
