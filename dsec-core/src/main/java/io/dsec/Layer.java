package io.dsec;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A read-only, content-addressed layer: an EROFS image named by the sha256 of its bytes.
 *
 * @param kind      its role in an image
 * @param name      a human name such as {@code debian-12}
 * @param version   a human version such as {@code 2026.11}; {@code latest} when none was given
 * @param digest    {@code sha256:<64 hex>} of the image bytes
 * @param sizeBytes the size of the image, padded to a multiple of 2 MiB
 */
public record Layer(LayerKind kind, String name, String version, String digest, long sizeBytes) {
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,127}");
    private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,127}");
    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");

    public Layer {
        Objects.requireNonNull(kind, "kind");
        checkName(name);
        checkVersion(version);
        if (digest == null || !DIGEST.matcher(digest).matches()) {
            throw new InvalidSpecException("layer.digest", digest, "a digest is sha256:<64 lowercase hex digits>");
        }
        if (sizeBytes <= 0) {
            throw new InvalidSpecException("layer.sizeBytes", sizeBytes, "an image has a positive size");
        }
    }

    /** {@code name:version}. */
    public String reference() {
        return name + ":" + version;
    }

    /** The 64 hex digits of the digest, without the algorithm. */
    public String hex() {
        return digest.substring("sha256:".length());
    }

    static void checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new InvalidSpecException("layer.name", name,
                "use 1-128 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
        }
    }

    static void checkVersion(String version) {
        if (version == null || !VERSION.matcher(version).matches()) {
            throw new InvalidSpecException("layer.version", version,
                "use 1-128 characters of A-Z, a-z, 0-9, '.', '_', '+' or '-', starting with a letter or digit");
        }
    }

    /** Splits {@code name[:version]} into its parts, checking both; the version defaults to {@code latest}. */
    public static String[] parseReference(String reference) {
        if (reference == null) {
            throw new InvalidSpecException("layer reference", null, "give name or name:version, such as debian-12:2026.11");
        }
        int colon = reference.indexOf(':');
        String name = colon < 0 ? reference : reference.substring(0, colon);
        String version = colon < 0 ? "latest" : reference.substring(colon + 1);
        checkName(name);
        checkVersion(version);
        return new String[] {name, version};
    }
}
