package io.dsec.internal.host;

import io.dsec.OciRuntime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;

/**
 * A host's settings as the builder checked them.
 *
 * @param executor null for the host's own
 */
public record HostConfig(Path stateDir, OciRuntime runtime, String toolkitPath, ExecutorService executor, Duration agentStartTimeout) {
}
