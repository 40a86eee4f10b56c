package io.dsec;

/** What a snapshot captures. */
public enum SnapshotMode {
    /** What the sandbox changed in its filesystem (pack_diff). Processes are not captured: branches re-run what they need. */
    FILESYSTEM,
    /** Filesystem, memory and device state, so processes resume where they were: microVM sandboxes only. */
    MEMORY
}
