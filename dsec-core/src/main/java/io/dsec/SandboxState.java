package io.dsec;

/** Where a sandbox is in its life. */
public enum SandboxState {
    /** Being created. */
    CREATING,
    /** Its agent answers; exec and file calls work. */
    RUNNING,
    /** Its init process died (for example OOM-killed); calls fail with the reason. */
    DEAD,
    /** Closed: processes killed, mounts and cgroup removed. */
    CLOSED
}
