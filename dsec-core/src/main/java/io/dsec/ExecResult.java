package io.dsec;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * How a command ended. A program that does not exist ends with exit code 127 (126 when it cannot be executed);
 * a command killed by a signal has {@code exitCode} 128 + signal and {@code signal} set.
 *
 * @param exitCode            the exit status (128 + signal when killed)
 * @param signal              the signal that killed it, or 0
 * @param stdout              standard output kept (head and tail when over the cap)
 * @param stderr              standard error kept
 * @param duration            from start to exit, measured in the sandbox
 * @param timedOut            true when the timeout killed it
 * @param stdoutDroppedBytes  bytes of standard output dropped between head and tail
 * @param stderrDroppedBytes  bytes of standard error dropped between head and tail
 */
public record ExecResult(int exitCode, int signal, byte[] stdout, byte[] stderr, Duration duration, boolean timedOut,
                         long stdoutDroppedBytes, long stderrDroppedBytes) {

    public String stdoutText() {
        return new String(stdout, StandardCharsets.UTF_8);
    }

    public String stderrText() {
        return new String(stderr, StandardCharsets.UTF_8);
    }

    /** True when the command exited with status 0. */
    public boolean ok() {
        return exitCode == 0 && signal == 0 && !timedOut;
    }

    @Override
    public String toString() {
        return "ExecResult[exitCode=" + exitCode + ", signal=" + signal + ", timedOut=" + timedOut + ", duration=" + duration
            + ", stdout=" + stdout.length + " bytes, stderr=" + stderr.length + " bytes]";
    }
}
