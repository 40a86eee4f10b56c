package io.dsec;

import io.dsec.internal.admission.AdmissionPolicy;
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
        private AdmissionPolicy admission = AdmissionPolicy.DEFAULT;

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

        // ------------------------------------------------------------------------------------------ admission

        /**
         * How many times its capacity the specs of admitted sandboxes may add up to, for {@link HostResource#MEMORY},
         * {@link HostResource#CPU} or {@link HostResource#PIDS}: 1 (no overcommit) to 10000. Defaults: memory and CPU
         * 100, pids 1000 (a spec's limits are caps, rarely used in full; the real-use headroom is what protects the host).
         */
        public Builder overcommit(HostResource resource, double ratio) {
            this.admission = admission.withOvercommit(resource, ratio);
            return this;
        }

        /** {@code overcommit(HostResource.MEMORY, ratio)}. */
        public Builder memoryOvercommit(double ratio) {
            return overcommit(HostResource.MEMORY, ratio);
        }

        /** {@code overcommit(HostResource.CPU, ratio)}. */
        public Builder cpuOvercommit(double ratio) {
            return overcommit(HostResource.CPU, ratio);
        }

        /**
         * The fraction of the host's memory (0 to 0.9) that projected real use must leave free: a sandbox is admitted
         * only while what the host uses now, plus what the creations in flight and it are expected to use, stays under
         * the rest. Default 0.05.
         */
        public Builder headroom(double fraction) {
            this.admission = admission.withHeadroom(fraction);
            return this;
        }

        /** The memory that projected real use must leave free, as a size such as {@code 2g}. */
        public Builder headroom(String size) {
            this.admission = admission.withHeadroom(size);
            return this;
        }

        /**
         * Also admits only while the sandboxes' CPU use, plus what the new one is expected to use, leaves this fraction
         * (0 to 0.9) of the host's cores free. Off by default: CPU is elastic, and busy sandboxes slow down rather than fail.
         */
        public Builder cpuHeadroom(double fraction) {
            this.admission = admission.withCpuHeadroom(fraction);
            return this;
        }

        /** Disk space of the state directory's file system to keep free (sandboxes write there). Default 512m. */
        public Builder diskHeadroom(String size) {
            this.admission = admission.withDiskHeadroom(size);
            return this;
        }

        /**
         * What a new sandbox is expected to use when projecting real use: memory such as {@code 64m} and a fraction
         * (0 to 1) of its CPU quota; the running sandboxes' average is used instead when higher. Default 64m and 0.05.
         */
        public Builder expectedSandboxUse(String memory, double cpuFraction) {
            this.admission = admission.withExpectedUse(memory, cpuFraction);
            return this;
        }

        /** How many creations may run at once, 1 to 4096 (creation is I/O-heavy); the rest wait. Default 64. */
        public Builder maxCreationsInFlight(int n) {
            this.admission = admission.withMaxCreationsInFlight(n);
            return this;
        }

        /**
         * How many creations may wait for admission, 0 to 1000000; beyond it a creation is rejected at once. 0: whatever
         * does not fit now is rejected at once. Default 4096.
         */
        public Builder admissionQueueLimit(int n) {
            this.admission = admission.withQueueLimit(n);
            return this;
        }

        /** How long a creation may wait for admission before it fails with {@link AdmissionException}. Default 5 minutes. */
        public Builder admissionTimeout(Duration timeout) {
            this.admission = admission.withTimeout(timeout);
            return this;
        }

        /** Opens the host: checks root, tools and kernel features, and picks the runtime. */
        public SandboxHost build() {
            return ContainerSandboxHost.open(new HostConfig(stateDir, runtime, toolkitPath, executor, agentStartTimeout, layerStore,
                snapshotSquashDepth, admission));
        }
    }
}
