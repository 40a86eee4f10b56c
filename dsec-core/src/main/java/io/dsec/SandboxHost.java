package io.dsec;

import java.nio.file.Path;
import java.util.Collection;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The entry point a rollout worker holds, one per host: it builds layers and creates sandboxes. Closing it
 * closes every sandbox it created and unmounts every layer.
 */
public interface SandboxHost extends AutoCloseable {
    Layers layers();

    /** Creates a sandbox and waits until its agent answers. On failure nothing of it is left behind. */
    Sandbox create(SandboxSpec spec);

    /** Creates a sandbox on the host's executor; many may be created at once. */
    CompletableFuture<Sandbox> createAsync(SandboxSpec spec);

    /** The sandboxes this host has open. */
    Collection<Sandbox> sandboxes();

    Optional<Sandbox> sandbox(String id);

    /** Where the host keeps layers, sandbox bundles and runtime state. */
    Path stateDir();

    /** A short description of the backend in use, such as {@code runc 1.1.5 (cgroup v1)}. */
    String backendDescription();

    @Override
    void close();
}
