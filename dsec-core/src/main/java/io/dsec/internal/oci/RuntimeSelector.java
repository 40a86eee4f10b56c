package io.dsec.internal.oci;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.MissingPrerequisiteException;
import io.dsec.OciRuntime;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Picks the OCI runtime: crun where it works on this host's cgroups, else runc, and says which in one log line. */
public final class RuntimeSelector {
    private static final Logger LOG = LoggerFactory.getLogger(RuntimeSelector.class);

    private RuntimeSelector() {
    }

    public static OciRuntimeCli select(OciRuntime wanted, CgroupLayout cgroups, Path stateRoot, ObjectMapper mapper) {
        return select(wanted, cgroups, stateRoot, mapper, RuntimeSelector::onPath);
    }

    /** As above, with the lookup of a tool on PATH given (tests give their own). */
    static OciRuntimeCli select(OciRuntime wanted, CgroupLayout cgroups, Path stateRoot, ObjectMapper mapper,
                                Function<String, Optional<Path>> which) {
        Optional<Path> crun = which.apply("crun");
        Optional<Path> runc = which.apply("runc");
        switch (wanted) {
            case CRUN -> {
                Path bin = crun.orElseThrow(() -> new MissingPrerequisiteException("runtime CRUN was asked for but crun is not on PATH: apt-get install crun"));
                if (cgroups.crunRefuses()) {
                    throw new MissingPrerequisiteException("crun refuses this host's " + cgroups + ": mount a v1 hugetlb hierarchy so the v2 tree "
                        + "carries no controllers (mkdir -p /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb none /sys/fs/cgroup/hugetlb), "
                        + "or choose OciRuntime.RUNC");
                }
                LOG.info("dsec uses crun ({}) on {}", bin, cgroups);
                return new OciRuntimeCli("crun", bin, stateRoot.resolve("crun"), mapper);
            }
            case RUNC -> {
                Path bin = runc.orElseThrow(() -> new MissingPrerequisiteException("runtime RUNC was asked for but runc is not on PATH: apt-get install runc"));
                LOG.info("dsec uses runc ({}) on {}", bin, cgroups);
                return new OciRuntimeCli("runc", bin, stateRoot.resolve("runc"), mapper);
            }
            default -> {
                if (crun.isPresent() && !cgroups.crunRefuses()) {
                    LOG.info("dsec uses crun ({}) on {}", crun.get(), cgroups);
                    return new OciRuntimeCli("crun", crun.get(), stateRoot.resolve("crun"), mapper);
                }
                if (runc.isPresent()) {
                    LOG.info("dsec uses runc ({}) on {}{}", runc.get(), cgroups, crun.isPresent()
                        ? ": crun refuses hybrid cgroups while the v2 tree carries controllers (see README, 'crun on hybrid hosts')"
                        : ": crun is not installed");
                    return new OciRuntimeCli("runc", runc.get(), stateRoot.resolve("runc"), mapper);
                }
                throw new MissingPrerequisiteException("no OCI runtime found on PATH: apt-get install crun runc");
            }
        }
    }

    static Optional<Path> onPath(String tool) {
        String path = System.getenv().getOrDefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir, tool);
            if (Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }
}
