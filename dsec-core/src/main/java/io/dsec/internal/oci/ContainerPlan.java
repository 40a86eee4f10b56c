package io.dsec.internal.oci;

import java.nio.file.Path;

/**
 * Everything the OCI config of one sandbox is made from.
 *
 * @param id            container id
 * @param rootfs        the host path of the composed root (the overlay mount)
 * @param hostname      hostname inside
 * @param agentBinary   host path of the static agent, bind-mounted read-only
 * @param toolkitSource host path of the mounted toolkit layer, or null
 * @param toolkitPath   where the toolkit appears inside
 * @param memoryBytes   memory limit
 * @param cpus          CPU quota in cores
 * @param pidsLimit     pids limit
 * @param cgroupsPath   cgroup path relative to each hierarchy's root
 * @param cpuShares     the CPU class's weight as v1 shares (runtimes convert it for v2)
 */
public record ContainerPlan(String id, Path rootfs, String hostname, Path agentBinary, Path toolkitSource, String toolkitPath,
                            long memoryBytes, double cpus, int pidsLimit, String cgroupsPath, long cpuShares) {
    /** Where the agent binary appears inside every sandbox. */
    public static final String AGENT_PATH = "/.dsec/agent";
}
