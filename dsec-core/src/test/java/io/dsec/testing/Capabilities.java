package io.dsec.testing;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Gates for tests that need a capability of the host. Outside CI a missing capability skips the test with the
 * reason; under CI ({@code CI=true}) the test command installs everything, so a missing capability fails.
 */
public final class Capabilities {
    private Capabilities() {
    }

    public static boolean underCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /** Skips (or, under CI, fails) with {@code reason} unless {@code present}. */
    public static void require(boolean present, String reason) {
        if (present) {
            return;
        }
        if (underCi()) {
            fail("CI=true and a capability is missing: " + reason);
        }
        assumeTrue(false, reason);
    }

    public static void requireRoot() {
        require("root".equals(System.getProperty("user.name")) || isEuidZero(), "needs root (mounts, cgroups, OCI runtime); run the tests as root");
    }

    /** Needs {@code tool} on PATH; {@code pkg} is the Debian package that brings it. */
    public static void requireTool(String tool, String pkg) {
        require(onPath(tool), "needs " + tool + " on PATH: apt-get install " + pkg);
    }

    public static boolean onPath(String tool) {
        String path = System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        for (String dir : path.split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static boolean isEuidZero() {
        try {
            return Files.readString(Path.of("/proc/self/status")).lines()
                .filter(l -> l.startsWith("Uid:")).findFirst()
                .map(l -> l.split("\\s+")[2].equals("0")).orElse(false);
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
