package io.dsec;

import io.dsec.internal.host.ContainerSandboxHost;
import io.dsec.internal.host.HostConfig;
import io.dsec.internal.layer.LocalLayerStore;
import io.dsec.spi.LayerStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutorService;

/**
 * The entry point: {@code Sandboxes.builder().build()} opens a {@link SandboxHost} on this machine.
 *
 * <pre>{@code
 * try (SandboxHost host = Sandboxes.builder().stateDir(dir).build()) {
 *     Layer base = host.layers().fromDirectory(LayerKind.BASE, "debian-12", rootfsDir);
 *     try (Sandbox sb = host.create(SandboxSpec.of(Image.of(base)).memory("2g").cpus(1))) {
 *         ExecResult r = sb.exec("python3", "-c", "print(1)");
 *     }
 * }
 * }</pre>
 */
public final class Sandboxes {
    /** Where a host keeps its state unless told otherwise. */
    public static final Path DEFAULT_STATE_DIR = Path.of("/var/lib/dsec");
    public static final String DEFAULT_TOOLKIT_PATH = "/opt/dsec";

    private Sandboxes() {
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Configures a host. Each call checks its argument at once. */
    public static final class Builder {
        private Path stateDir = DEFAULT_STATE_DIR;
        private OciRuntime runtime = OciRuntime.AUTO;
        private String toolkitPath = DEFAULT_TOOLKIT_PATH;
        private ExecutorService executor;
        private Duration agentStartTimeout = Duration.ofSeconds(30);
        private LayerStore.Factory layerStore = LocalLayerStore::new;
        private int snapshotSquashDepth;

        private Builder() {
        }

        /** The directory for layers, sandbox bundles and runtime state; created if missing. Default {@code /var/lib/dsec}. */
        public Builder stateDir(Path dir) {
            if (dir == null) {
                throw new InvalidSpecException("stateDir", null, "give a directory, such as Path.of(\"/var/lib/dsec\")");
            }
            Path abs = dir.toAbsolutePath().normalize();
            if (abs.getParent() == null) {
                throw new InvalidSpecException("stateDir", dir, "give a directory below /, not / itself");
            }
            if (abs.toString().contains(":") || abs.toString().contains(",")) {
                throw new InvalidSpecException("stateDir", dir, "overlayfs options cannot hold ':' or ','; choose a path without them");
            }
            this.stateDir = abs;
            return this;
        }

        /** Which OCI runtime to use; {@link OciRuntime#AUTO} by default. */
        public Builder runtime(OciRuntime choice) {
            this.runtime = Objects.requireNonNull(choice, "runtime");
            return this;
        }

        /** Where the toolkit layer appears inside sandboxes, read-only. Default {@code /opt/dsec}. */
        public Builder toolkitPath(String path) {
            if (path == null || !path.startsWith("/") || path.equals("/") || path.contains("..") || path.startsWith("/proc")
                || path.startsWith("/sys") || path.startsWith("/dev") || path.startsWith("/.dsec")) {
                throw new InvalidSpecException("toolkitPath", path,
                    "give an absolute path of its own such as /opt/dsec (not /, /proc, /sys, /dev or /.dsec, no '..')");
            }
            this.toolkitPath = path;
            return this;
        }

        /** Runs {@link SandboxHost#createAsync} on this executor instead of the host's own; the host does not shut it down. */
        public Builder executor(ExecutorService executorService) {
            this.executor = Objects.requireNonNull(executorService, "executor");
            return this;
        }

        /** How long a new sandbox's agent may take to answer before creation fails. Default 30 s. */
        public Builder agentStartTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new InvalidSpecException("agentStartTimeout", timeout, "give a positive duration, such as Duration.ofSeconds(30)");
            }
            this.agentStartTimeout = timeout;
            return this;
        }

        /**
         * Where layers live. By default a local store under the state directory; dsec-image's on-demand stores keep
         * layers in shared storage (a directory on NFS or 3FS, S3, HTTP) and fetch them as they are read.
         */
        public Builder layerStore(LayerStore.Factory factory) {
            this.layerStore = Objects.requireNonNull(factory, "layerStore");
            return this;
        }

        /**
         * The longest chain of diffs a snapshot keeps (a snapshot of a branch of a snapshot of ...): a snapshot whose
         * chain would be longer squashes it into one diff, so mounts and lookups stay fast. 1 to 64; by default the
         * snapshot engine's (8).
         */
        public Builder snapshotSquashDepth(int depth) {
            if (depth < 1 || depth > 64) {
                throw new InvalidSpecException("snapshotSquashDepth", depth, "give 1 to 64 (diffs in a chain before it is squashed into one)");
            }
            this.snapshotSquashDepth = depth;
            return this;
        }

        /** Opens the host: checks root, tools and kernel features, and picks the runtime. */
        public SandboxHost build() {
            return ContainerSandboxHost.open(new HostConfig(stateDir, runtime, toolkitPath, executor, agentStartTimeout, layerStore,
                snapshotSquashDepth));
        }
    }
}
