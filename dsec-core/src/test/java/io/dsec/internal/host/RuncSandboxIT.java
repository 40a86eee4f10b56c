package io.dsec.internal.host;

import io.dsec.OciRuntime;
import io.dsec.testing.Capabilities;
import org.junit.jupiter.api.BeforeAll;

/** The container contract on runc. */
class RuncSandboxIT extends ContainerSandboxContract {
    @BeforeAll
    static void runcIsInstalled() {
        Capabilities.requireTool("runc", "runc");
    }

    @Override
    OciRuntime runtime() {
        return OciRuntime.RUNC;
    }
}
