package io.dsec;

/** The role of a read-only layer in a sandbox image. */
public enum LayerKind {
    /** The operating system and basic software: the lowest layer of the root filesystem. */
    BASE,
    /** Task code and its dependencies, laid over the base. */
    WORKSPACE,
    /** Tools the harness brings; mounted read-only at its own path, never merged into the writable root. */
    TOOLKIT,
    /**
     * What a sandbox changed, captured by a snapshot (pack_diff): overlay whiteouts and opaque directories kept, laid
     * over the workspace (and earlier diffs) of the sandboxes branched from it.
     */
    DIFF
}
