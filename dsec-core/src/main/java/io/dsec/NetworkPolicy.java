package io.dsec;

/** What network a sandbox gets. */
public enum NetworkPolicy {
    /** Its own network namespace with loopback only: the default. */
    NONE
}
