package io.dsec.internal.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.Exec;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.agent.AgentIo;
import io.dsec.testing.Capabilities;
import io.dsec.testing.ChildJvm;
import io.dsec.testing.HoldSandboxMain;
import io.dsec.testing.TestHost;
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
    private ChildJvm child;

    @AfterEach
    void cleanUp() {
        if (child != null) {
            child.close();
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
        child = ChildJvm.start(HoldSandboxMain.class, dir.resolve("child.log"), dir.toString());
        String id = child.awaitReady();
        assertThat(id).as("child JVM output; its log: %s", child.log()).isNotNull();
        assertThat(child.kill()).isEqualTo(128 + 9);

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
