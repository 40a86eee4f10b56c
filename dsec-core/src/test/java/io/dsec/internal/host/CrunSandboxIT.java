package io.dsec.internal.host;

import io.dsec.OciRuntime;
import io.dsec.internal.oci.CgroupLayout;
import io.dsec.testing.Capabilities;
import org.junit.jupiter.api.BeforeAll;

/** The container contract on crun. */
class CrunSandboxIT extends ContainerSandboxContract {
    @BeforeAll
    static void crunWorksHere() {
        Capabilities.requireTool("crun", "crun");
        Capabilities.require(!CgroupLayout.ofHost().crunRefuses(),
            "crun refuses this hybrid cgroup host: run .ci/setup-host (it mounts a v1 hugetlb hierarchy)");
    }

    @Override
    OciRuntime runtime() {
        return OciRuntime.CRUN;
    }
}
