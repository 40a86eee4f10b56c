package io.dsec.internal.oci;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.DsecException;
import io.dsec.SandboxLaunchException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Drives one OCI runtime binary (crun or runc) with its state under a dsec-owned root, so dsec's containers
 * never mix with anyone else's and can be listed again after a restart.
 */
public final class OciRuntimeCli {
    private static final long COMMAND_TIMEOUT_SECONDS = 60;

    private final String name;
    private final Path binary;
    private final Path stateRoot;
    private final ObjectMapper mapper;

    public OciRuntimeCli(String name, Path binary, Path stateRoot, ObjectMapper mapper) {
        this.name = name;
        this.binary = binary;
        this.stateRoot = stateRoot;
        this.mapper = mapper;
    }

    public String name() {
        return name;
    }

    public Path binary() {
        return binary;
    }

    /** The runtime's {@code --root}: its state for dsec's containers. */
    public Path stateRoot() {
        return stateRoot;
    }

    /**
     * Starts a container detached, with fd 3 (a listening socket the launcher binds at {@code agentSocket})
     * handed to its init. The runtime's own output and the container's stdio go to {@code log}. The container
     * is not the JVM's child: the runtime exits once it has started, and the container lives on.
     */
    public void runDetached(Path launcher, Path agentSocket, Path bundle, String id, Path log) {
        List<String> argv = new ArrayList<>(List.of(launcher.toString(), "launch", "--socket", agentSocket.toString(), "--"));
        argv.addAll(List.of(binary.toString(), "--root", stateRoot.toString(), "run", "--detach", "--preserve-fds", "1",
            "--bundle", bundle.toString(), id));
        ProcessBuilder pb = new ProcessBuilder(argv)
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .redirectErrorStream(true);
        int exit = runToEnd(pb, "run " + id);
        if (exit != 0) {
            throw new SandboxLaunchException(name + " run " + id + " failed (exit " + exit + "): " + tail(log));
        }
    }

    /** Kills and removes a container; no error if it is gone already. */
    public void deleteForce(String id) {
        Result r = call("delete", "--force", id);
        if (r.exit != 0 && !r.output.contains("does not exist") && !r.output.contains("not exist") && !r.output.contains("No such")) {
            throw new DsecException(name + " delete --force " + id + " failed (exit " + r.exit + "): " + r.output.trim());
        }
    }

    /** The runtime's status of a container ({@code running}, {@code stopped}, ...), or null if it does not know it. */
    public JsonNode state(String id) {
        Result r = call("state", id);
        if (r.exit != 0) {
            return null;
        }
        try {
            return mapper.readTree(r.output);
        } catch (IOException e) {
            throw new DsecException(name + " state " + id + " printed something that is not JSON: " + r.output.trim(), e);
        }
    }

    /** The ids of every container under dsec's runtime root. */
    public List<String> list() {
        if (!Files.isDirectory(stateRoot)) {
            return List.of();
        }
        Result r = call("list", "-q");
        if (r.exit != 0) {
            throw new DsecException(name + " list failed (exit " + r.exit + "): " + r.output.trim());
        }
        return r.output.lines().map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    /** {@code <binary> --version}'s first line. */
    public String version() {
        Result r = run(new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true), "--version");
        return r.output.lines().findFirst().orElse(name).trim();
    }

    private Result call(String... args) {
        List<String> argv = new ArrayList<>(List.of(binary.toString(), "--root", stateRoot.toString()));
        argv.addAll(List.of(args));
        return run(new ProcessBuilder(argv).redirectErrorStream(true), String.join(" ", args));
    }

    private Result run(ProcessBuilder pb, String what) {
        try {
            Process p = pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new DsecException(name + " " + what + " did not finish in " + COMMAND_TIMEOUT_SECONDS + " s");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new DsecException("could not start " + binary + " " + what + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DsecException("interrupted while waiting for " + name + " " + what, e);
        }
    }

    private int runToEnd(ProcessBuilder pb, String what) {
        try {
            Process p = pb.start();
            if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new SandboxLaunchException(name + " " + what + " did not finish in " + COMMAND_TIMEOUT_SECONDS + " s");
            }
            return p.exitValue();
        } catch (IOException e) {
            throw new SandboxLaunchException("could not start " + binary + " " + what + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxLaunchException("interrupted while waiting for " + name + " " + what, e);
        }
    }

    private static String tail(Path log) {
        try {
            String text = Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
            String[] lines = text.strip().split("\n");
            StringBuilder sb = new StringBuilder();
            for (int i = Math.max(0, lines.length - 8); i < lines.length; i++) {
                sb.append(lines[i]).append('\n');
            }
            return sb.toString().strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private record Result(int exit, String output) {
    }
}
