package io.dsec.internal.host;

import io.dsec.OciRuntime;
import io.dsec.internal.admission.AdmissionPolicy;
import io.dsec.spi.LayerStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;

/**
 * A host's settings as the builder checked them.
 *
 * @param executor            null for the host's own
 * @param layerStore          opens the host's layer store on its state directory
 * @param snapshotSquashDepth the longest diff chain a snapshot keeps before it is squashed into one diff; 0 for the
 *                            snapshot engine's default
 * @param admission           when sandboxes are admitted (overcommit, headroom, queue)
 */
public record HostConfig(Path stateDir, OciRuntime runtime, String toolkitPath, ExecutorService executor, Duration agentStartTimeout,
                         LayerStore.Factory layerStore, int snapshotSquashDepth, AdmissionPolicy admission) {

    public HostConfig {
        if (admission == null) {
            admission = AdmissionPolicy.DEFAULT;
        }
    }

    public HostConfig(Path stateDir, OciRuntime runtime, String toolkitPath, ExecutorService executor, Duration agentStartTimeout,
                      LayerStore.Factory layerStore, int snapshotSquashDepth) {
        this(stateDir, runtime, toolkitPath, executor, agentStartTimeout, layerStore, snapshotSquashDepth, AdmissionPolicy.DEFAULT);
    }

    public HostConfig(Path stateDir, OciRuntime runtime, String toolkitPath, ExecutorService executor, Duration agentStartTimeout,
                      LayerStore.Factory layerStore) {
        this(stateDir, runtime, toolkitPath, executor, agentStartTimeout, layerStore, 0);
    }
}
