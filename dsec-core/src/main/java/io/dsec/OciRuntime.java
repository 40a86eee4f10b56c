package io.dsec;

/** Which OCI runtime drives container sandboxes. */
public enum OciRuntime {
    /** crun when it works on this host (it is faster), else runc; one log line says which and why. */
    AUTO,
    CRUN,
    RUNC
}
