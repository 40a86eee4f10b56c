package io.dsec.image;

import io.dsec.InvalidSpecException;
import io.dsec.image.internal.store.DirectoryBlobStore;
import io.dsec.image.internal.store.HttpBlobStore;
import io.dsec.image.internal.store.S3BlobStore;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/** Opens {@link BlobStore}s: a directory (local, or a shared 3FS/NFS/CephFS mount), an S3-compatible bucket, or HTTP. */
public final class BlobStores {
    /** Connect timeout of the S3 and HTTP stores unless set: 5 s. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** Read timeout (no bytes for this long fails the request) of the S3 and HTTP stores unless set: 30 s. */
    public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

    private BlobStores() {
    }

    /** Blobs as files under {@code root} (created when missing); puts are atomic renames, without fsync. */
    public static BlobStore directory(Path root) {
        return directory(root, false);
    }

    /**
     * Blobs as files under {@code root} (created when missing).
     *
     * @param fsync whether each put flushes the file and its directory to stable storage before returning; slower, but
     *              a blob survives a host crash right after its put (needed when a manifest is written after its chunks)
     */
    public static BlobStore directory(Path root, boolean fsync) {
        if (root == null) {
            throw new InvalidSpecException("root", null, "give the directory that holds the blobs, e.g. /mnt/3fs/dsec");
        }
        if (java.nio.file.Files.exists(root) && !java.nio.file.Files.isDirectory(root)) {
            throw new InvalidSpecException("root", root, "it is not a directory; give the directory that holds the blobs");
        }
        return new DirectoryBlobStore(root, fsync);
    }

    /** An S3-compatible bucket (AWS, MinIO, Ceph RGW, s3proxy…). */
    public static BlobStore s3(S3Settings settings) {
        if (settings == null) {
            throw new InvalidSpecException("settings", null, "give S3Settings.of(endpoint, bucket)");
        }
        return new S3BlobStore(settings);
    }

    /** Read-only blobs under an HTTP(S) base URL, e.g. nginx serving a blob directory; default timeouts. */
    public static BlobStore http(URI base) {
        return http(base, DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT);
    }

    /** Read-only blobs under an HTTP(S) base URL: key {@code k} is {@code <base>/k}. */
    public static BlobStore http(URI base, Duration connectTimeout, Duration readTimeout) {
        URI checked = checkEndpoint("base", base, "http://127.0.0.1:8080/dsec/", true);
        checkTimeout("connectTimeout", connectTimeout);
        checkTimeout("readTimeout", readTimeout);
        return new HttpBlobStore(checked, connectTimeout, readTimeout);
    }

    /**
     * Where and how to reach an S3 bucket. Start from {@link #of(URI, String)} and change fields with the withers; each
     * checks its value and throws {@link InvalidSpecException} naming the field.
     *
     * @param endpoint       {@code http(s)://host[:port]}, without path
     * @param region         signing region, {@code us-east-1} unless set (most S3-compatible servers ignore it)
     * @param bucket         bucket name (3-63 characters of {@code [a-z0-9.-]})
     * @param prefix         prepended to every key, "" or ending in '/', e.g. {@code dsec/}
     * @param accessKey      access key id; null with {@code secretKey} null to use the AWS default credential chain
     *                       (environment, profile, instance role)
     * @param secretKey      secret access key
     * @param pathStyle      {@code http://host/bucket/key} (true, the default; what most S3-compatible servers need) or
     *                       {@code http://bucket.host/key}
     * @param connectTimeout how long to wait for a TCP connection
     * @param readTimeout    how long a request may wait for bytes
     * @param maxAttempts    attempts per request, 1 for no retries (default 3, with backoff)
     */
    public record S3Settings(URI endpoint, String region, String bucket, String prefix, String accessKey, String secretKey,
                             boolean pathStyle, Duration connectTimeout, Duration readTimeout, int maxAttempts) {
        private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]");
        private static final Pattern REGION = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
        private static final Pattern PREFIX = Pattern.compile("([a-z0-9._-]+/)*");
        private static final Pattern KEY_ID = Pattern.compile("[\\x21-\\x7e]{1,256}");

        public S3Settings {
            endpoint = checkEndpoint("endpoint", endpoint, "http://127.0.0.1:9000", false);
            if (region == null || !REGION.matcher(region).matches()) {
                throw new InvalidSpecException("region", region, "use a region name such as us-east-1");
            }
            if (bucket == null || !BUCKET.matcher(bucket).matches() || bucket.contains("..")) {
                throw new InvalidSpecException("bucket", bucket,
                    "use 3-63 characters of [a-z0-9.-], starting and ending with a letter or digit, e.g. dsec-layers");
            }
            if (prefix == null || !PREFIX.matcher(prefix).matches() || prefix.length() > 256
                || prefix.startsWith("./") || prefix.contains("/./") || prefix.startsWith("../") || prefix.contains("/../")) {
                throw new InvalidSpecException("prefix", prefix,
                    "use \"\" or segments of [a-z0-9._-] each ending in '/', e.g. dsec/ or team/dsec/");
            }
            if ((accessKey == null) != (secretKey == null)) {
                throw new InvalidSpecException(accessKey == null ? "accessKey" : "secretKey", null,
                    "give both the access key and the secret, or neither to use the AWS default credential chain");
            }
            if (accessKey != null && !KEY_ID.matcher(accessKey).matches()) {
                throw new InvalidSpecException("accessKey", accessKey.isEmpty() ? "\"\"" : "(" + accessKey.length() + " characters)",
                    "use the access key id: 1-256 printable characters without spaces");
            }
            if (secretKey != null && (secretKey.isEmpty() || secretKey.isBlank())) {
                throw new InvalidSpecException("secretKey", "(blank)", "use the secret access key that belongs to the access key");
            }
            checkTimeout("connectTimeout", connectTimeout);
            checkTimeout("readTimeout", readTimeout);
            if (maxAttempts < 1 || maxAttempts > 10) {
                throw new InvalidSpecException("maxAttempts", maxAttempts, "use 1 (no retries) to 10");
            }
        }

        /** Path-style, region us-east-1, no prefix, default credential chain, default timeouts, 3 attempts. */
        public static S3Settings of(URI endpoint, String bucket) {
            return new S3Settings(endpoint, "us-east-1", bucket, "", null, null, true, DEFAULT_CONNECT_TIMEOUT,
                DEFAULT_READ_TIMEOUT, 3);
        }

        public S3Settings credentials(String accessKey, String secretKey) {
            if (accessKey == null || secretKey == null) {
                throw new InvalidSpecException(accessKey == null ? "accessKey" : "secretKey", null,
                    "give both; to use the AWS default credential chain, use defaultCredentials()");
            }
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        /** Credentials from the AWS default chain: environment, system properties, profile, container or instance role. */
        public S3Settings defaultCredentials() {
            return new S3Settings(endpoint, region, bucket, prefix, null, null, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings endpoint(URI endpoint) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings region(String region) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings bucket(String bucket) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings prefix(String prefix) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings pathStyle(boolean pathStyle) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings connectTimeout(Duration connectTimeout) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings readTimeout(Duration readTimeout) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        public S3Settings maxAttempts(int maxAttempts) {
            return new S3Settings(endpoint, region, bucket, prefix, accessKey, secretKey, pathStyle, connectTimeout, readTimeout,
                maxAttempts);
        }

        /** Without the secret. */
        @Override
        public String toString() {
            return "S3Settings[endpoint=" + endpoint + ", region=" + region + ", bucket=" + bucket + ", prefix=" + prefix
                + ", accessKey=" + accessKey + ", secretKey=" + (secretKey == null ? null : "***") + ", pathStyle=" + pathStyle
                + ", connectTimeout=" + connectTimeout + ", readTimeout=" + readTimeout + ", maxAttempts=" + maxAttempts + "]";
        }
    }

    static URI checkEndpoint(String field, URI uri, String example, boolean pathAllowed) {
        if (uri == null) {
            throw new InvalidSpecException(field, null, "give an http(s) URL, e.g. " + example);
        }
        String scheme = uri.getScheme();
        if (!uri.isAbsolute() || uri.isOpaque() || scheme == null
            || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))) {
            throw new InvalidSpecException(field, uri, "use an absolute http:// or https:// URL, e.g. " + example);
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new InvalidSpecException(field, uri, "give a host (and port), e.g. " + example);
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null || uri.getRawUserInfo() != null) {
            throw new InvalidSpecException(field, uri, "remove the query, fragment or user info, e.g. " + example);
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        if (!pathAllowed) {
            if (!path.isEmpty() && !path.equals("/")) {
                throw new InvalidSpecException(field, uri, "give only scheme, host and port (the bucket and prefix are separate "
                    + "settings), e.g. " + example);
            }
            return URI.create(scheme.toLowerCase(java.util.Locale.ROOT) + "://" + uri.getRawAuthority());
        }
        return path.endsWith("/") ? uri : URI.create(uri + "/");
    }

    static void checkTimeout(String field, Duration d) {
        Objects.requireNonNull(field);
        if (d == null || d.isNegative() || d.isZero() || d.compareTo(MAX_TIMEOUT) > 0) {
            throw new InvalidSpecException(field, d, "use a duration above zero and at most 10 minutes, e.g. Duration.ofSeconds(5)");
        }
    }
}
