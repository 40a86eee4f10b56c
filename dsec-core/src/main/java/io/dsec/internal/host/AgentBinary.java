package io.dsec.internal.host;

import io.dsec.MissingPrerequisiteException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The static agent binary shipped in the jar, unpacked once per host under a content-addressed name so a
 * running sandbox's bind mount never sees it change.
 */
final class AgentBinary {
    static final String RESOURCE = "/io/dsec/internal/agent/dsec-agent";

    private AgentBinary() {
    }

    static Path install(Path dir) {
        byte[] bytes;
        try (InputStream in = AgentBinary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new MissingPrerequisiteException("the dsec-core jar has no sandbox agent at " + RESOURCE
                    + ": it is built with gcc -static during the Maven build (apt-get install gcc libc6-dev, then rebuild)");
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the agent from the jar", e);
        }
        String hex;
        try {
            hex = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
        Path target = dir.resolve("dsec-agent-" + hex);
        if (Files.isExecutable(target)) {
            return target;
        }
        try {
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, ".agent", ".tmp");
            Files.write(tmp, bytes);
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-xr-xr-x"));
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("installing the agent at " + target, e);
        }
        return target;
    }
}
