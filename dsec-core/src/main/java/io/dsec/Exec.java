package io.dsec;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A command to run in a sandbox. Immutable; each call returns a new {@code Exec} and checks its argument.
 *
 * <pre>{@code Exec.shell("cd /repo && pytest -q").timeout(Duration.ofMinutes(5)).env("K", "V").onStdout(log::info)}</pre>
 *
 * @param argv           program and arguments; the program is looked up on PATH
 * @param env            variables laid over the sandbox's env
 * @param workdir        working directory, or null for the sandbox's
 * @param uid            user id to run as
 * @param gid            group id to run as
 * @param stdin          bytes fed to standard input, then closed
 * @param timeout        after this the whole process group is killed; {@link Duration#ZERO} for none
 * @param maxOutputBytes per stream, the most bytes kept (half from the head, half from the tail); the rest is counted
 * @param onStdout       called with each line of standard output as it arrives (no line terminator), or null
 * @param onStderr       called with each line of standard error as it arrives, or null
 */
public record Exec(List<String> argv, Map<String, String> env, String workdir, int uid, int gid, byte[] stdin,
                   Duration timeout, long maxOutputBytes, Consumer<String> onStdout, Consumer<String> onStderr) {

    public static final long DEFAULT_MAX_OUTPUT_BYTES = 16L << 20;
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);

    public Exec {
        argv = List.copyOf(Objects.requireNonNull(argv, "argv"));
        if (argv.isEmpty() || argv.get(0).isEmpty()) {
            throw new InvalidSpecException("exec.argv", argv, "give a program to run, such as Exec.of(\"python3\", \"-c\", \"print(1)\")");
        }
        for (String arg : argv) {
            if (arg.indexOf('\0') >= 0) {
                throw new InvalidSpecException("exec.argv", arg, "arguments cannot hold NUL bytes");
            }
        }
        env = Map.copyOf(Objects.requireNonNull(env, "env"));
        env.forEach(SandboxSpec::checkEnv);
        if (workdir != null && !workdir.startsWith("/")) {
            throw new InvalidSpecException("exec.workdir", workdir, "give an absolute path inside the sandbox, such as /repo");
        }
        if (uid < 0 || gid < 0) {
            throw new InvalidSpecException("exec.user", uid + ":" + gid, "give non-negative uid and gid");
        }
        stdin = stdin == null ? new byte[0] : stdin;
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new InvalidSpecException("exec.timeout", timeout, "give a positive duration, or Duration.ZERO for none");
        }
        if (maxOutputBytes < 2 || maxOutputBytes > (1L << 31)) {
            throw new InvalidSpecException("exec.maxOutputBytes", maxOutputBytes, "give between 2 bytes and 2 GiB per stream");
        }
    }

    /** Runs {@code argv} directly, without a shell. */
    public static Exec of(String... argv) {
        return new Exec(List.of(argv), Map.of(), null, 0, 0, null, DEFAULT_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES, null, null);
    }

    /** Runs {@code command} with {@code /bin/sh -c}. */
    public static Exec shell(String command) {
        return of("/bin/sh", "-c", Objects.requireNonNull(command, "command"));
    }

    public Exec env(String name, String value) {
        SandboxSpec.checkEnv(name, value);
        Map<String, String> next = new LinkedHashMap<>(env);
        next.put(name, value);
        return new Exec(argv, next, workdir, uid, gid, stdin, timeout, maxOutputBytes, onStdout, onStderr);
    }

    public Exec workdir(String path) {
        return new Exec(argv, env, path, uid, gid, stdin, timeout, maxOutputBytes, onStdout, onStderr);
    }

    public Exec user(int newUid, int newGid) {
        return new Exec(argv, env, workdir, newUid, newGid, stdin, timeout, maxOutputBytes, onStdout, onStderr);
    }

    public Exec stdin(byte[] bytes) {
        return new Exec(argv, env, workdir, uid, gid, bytes.clone(), timeout, maxOutputBytes, onStdout, onStderr);
    }

    public Exec stdin(String text) {
        return stdin(text.getBytes(StandardCharsets.UTF_8));
    }

    public Exec timeout(Duration limit) {
        return new Exec(argv, env, workdir, uid, gid, stdin, limit, maxOutputBytes, onStdout, onStderr);
    }

    public Exec maxOutputBytes(long bytes) {
        return new Exec(argv, env, workdir, uid, gid, stdin, timeout, bytes, onStdout, onStderr);
    }

    public Exec onStdout(Consumer<String> lines) {
        return new Exec(argv, env, workdir, uid, gid, stdin, timeout, maxOutputBytes, lines, onStderr);
    }

    public Exec onStderr(Consumer<String> lines) {
        return new Exec(argv, env, workdir, uid, gid, stdin, timeout, maxOutputBytes, onStdout, lines);
    }
}
