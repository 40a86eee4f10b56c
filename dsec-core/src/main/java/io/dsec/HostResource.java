package io.dsec;

import java.util.Locale;

/** A resource of the host that admission control accounts for. */
public enum HostResource {
    /** Bytes of RAM: capacity is MemTotal, allocation the specs' memory limits, real use what the kernel reports in use. */
    MEMORY,
    /** Cores: capacity is the processors available, allocation the specs' CPU quotas, real use the sandboxes' CPU time rate. */
    CPU,
    /** Processes and threads: capacity is the kernel's pid_max, allocation the specs' pids limits. */
    PIDS,
    /** Bytes of disk under the state directory: sandboxes' writes go there, so admission keeps some of it free. */
    DISK;

    /** Its lower-case name, as messages and stats use it. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
