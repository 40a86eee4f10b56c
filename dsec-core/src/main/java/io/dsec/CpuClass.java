package io.dsec;

/**
 * How a sandbox's processes compete for CPU. A sandbox is typically LATENCY_SENSITIVE while the model waits on its
 * command and BATCH otherwise; {@link Sandbox#cpuClass(CpuClass)} changes it on a running sandbox.
 */
public enum CpuClass {
    /** Runs first: its command is what the trainer waits on. */
    LATENCY_SENSITIVE,
    /** The default. */
    NORMAL,
    /** Gets what the others leave. */
    BATCH
}
