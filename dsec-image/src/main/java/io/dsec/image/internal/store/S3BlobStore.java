package io.dsec.image.internal.store;

import io.dsec.DsecException;
import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores.S3Settings;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Blobs as objects in an S3-compatible bucket, key {@code k} at {@code <prefix>k}. One {@link S3Client} over the
 * JDK's {@code HttpURLConnection} (which keeps connections alive and reuses them), safe for concurrent use.
 *
 * <p>Checksums are only sent and checked where S3 requires them, so that servers without the 2025 flexible-checksum
 * support (older MinIO, Ceph, gateways) work; chunks are verified by their sha256 names on the way in anyway.
 */
public final class S3BlobStore implements BlobStore {
    /** Keys per ListObjectsV2 page: the S3 maximum. */
    static final int DEFAULT_PAGE_SIZE = 1000;

    private final S3Settings settings;
    private final S3Client client;
    private final int pageSize;
    private final String description;

    public S3BlobStore(S3Settings settings) {
        this(settings, DEFAULT_PAGE_SIZE);
    }

    S3BlobStore(S3Settings settings, int pageSize) {
        this.settings = settings;
        this.pageSize = pageSize;
        this.description = "s3 " + settings.endpoint() + "/" + settings.bucket() + "/" + settings.prefix();
        AwsCredentialsProvider credentials = settings.accessKey() == null
            ? DefaultCredentialsProvider.builder().build()
            : StaticCredentialsProvider.create(AwsBasicCredentials.create(settings.accessKey(), settings.secretKey()));
        this.client = S3Client.builder()
            .endpointOverride(settings.endpoint())
            .region(Region.of(settings.region()))
            .forcePathStyle(settings.pathStyle())
            .credentialsProvider(credentials)
            .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
            .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
            .httpClientBuilder(UrlConnectionHttpClient.builder()
                .connectionTimeout(settings.connectTimeout())
                .socketTimeout(settings.readTimeout()))
            .overrideConfiguration(o -> o.retryStrategy(b -> b.maxAttempts(settings.maxAttempts())))
            .build();
    }

    @Override
    public byte[] get(String key) {
        String objectKey = objectKey(key);
        try {
            ResponseBytes<GetObjectResponse> bytes = client.getObjectAsBytes(GetObjectRequest.builder()
                .bucket(settings.bucket()).key(objectKey).build());
            return bytes.asByteArrayUnsafe();
        } catch (SdkException e) {
            throw map("read", key, e);
        }
    }

    @Override
    public byte[] getRange(String key, long offset, int length) {
        String objectKey = objectKey(key);
        Keys.checkRange(offset, length);
        if (length == 0) {
            if (!exists(key)) {
                throw new BlobNotFoundException(describe(), key);
            }
            return new byte[0];
        }
        long last = offset + length - 1;
        try {
            ResponseBytes<GetObjectResponse> bytes = client.getObjectAsBytes(GetObjectRequest.builder()
                .bucket(settings.bucket()).key(objectKey).range("bytes=" + offset + "-" + last).build());
            byte[] data = bytes.asByteArrayUnsafe();
            if (bytes.response().contentRange() == null && (offset > 0 || data.length > length)) {
                // A server that ignores Range sends the whole object (200): cut our range out of it.
                return slice(data, offset, length);
            }
            return data;
        } catch (S3Exception e) {
            if (e.statusCode() == 416) {
                return new byte[0]; // offset at or past the end of an existing object
            }
            throw map("read", key, e);
        } catch (SdkException e) {
            throw map("read", key, e);
        }
    }

    @Override
    public boolean exists(String key) {
        String objectKey = objectKey(key);
        try {
            client.headObject(b -> b.bucket(settings.bucket()).key(objectKey));
            return true;
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                return false;
            }
            throw map("check", key, e);
        } catch (SdkException e) {
            throw map("check", key, e);
        }
    }

    @Override
    public void put(String key, byte[] data) {
        String objectKey = objectKey(key);
        try {
            client.putObject(b -> b.bucket(settings.bucket()).key(objectKey).contentLength((long) data.length)
                .contentType("application/octet-stream"), RequestBody.fromBytes(data));
        } catch (SdkException e) {
            throw map("write", key, e);
        }
    }

    @Override
    public List<String> list(String prefix) {
        Keys.checkPrefix(prefix);
        String full = settings.prefix() + prefix;
        List<String> keys = new ArrayList<>();
        try {
            ListObjectsV2Request request = ListObjectsV2Request.builder().bucket(settings.bucket()).prefix(full).maxKeys(pageSize)
                .build();
            for (S3Object o : client.listObjectsV2Paginator(request).contents()) {
                String key = o.key();
                if (key.startsWith(settings.prefix())) {
                    key = key.substring(settings.prefix().length());
                    if (Keys.isValid(key)) {
                        keys.add(key);
                    }
                }
            }
        } catch (SdkException e) {
            throw map("list", prefix + "*", e);
        }
        Collections.sort(keys);
        return keys;
    }

    @Override
    public void delete(String key) {
        String objectKey = objectKey(key);
        try {
            client.deleteObject(b -> b.bucket(settings.bucket()).key(objectKey));
        } catch (S3Exception e) {
            if (e.statusCode() == 404 && !"NoSuchBucket".equals(errorCode(e))) {
                return;
            }
            throw map("delete", key, e);
        } catch (SdkException e) {
            throw map("delete", key, e);
        }
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public String toString() {
        return describe();
    }

    @Override
    public void close() {
        client.close();
    }

    private String objectKey(String key) {
        return settings.prefix() + Keys.check(key);
    }

    private static String errorCode(S3Exception e) {
        return e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
    }

    private DsecException map(String what, String key, SdkException e) {
        String where = "blob " + key + " in " + describe() + " (endpoint " + settings.endpoint() + ", bucket " + settings.bucket()
            + ", key " + settings.prefix() + key + ")";
        if (e instanceof S3Exception s3) {
            int status = s3.statusCode();
            String code = errorCode(s3);
            String detail = status + (code == null ? "" : " " + code)
                + (s3.awsErrorDetails() != null && s3.awsErrorDetails().errorMessage() != null
                    ? ": " + s3.awsErrorDetails().errorMessage() : "");
            if ("NoSuchBucket".equals(code)) {
                return new ImageFetchException("cannot " + what + " " + where + ": bucket " + settings.bucket()
                    + " does not exist at " + settings.endpoint() + "; create it, or fix the bucket setting", e);
            }
            if (status == 404) {
                return new BlobNotFoundException(describe(), key);
            }
            if (status == 401 || status == 403) {
                return new ImageFetchException("cannot " + what + " " + where + ": access denied (" + detail
                    + "); check the access key and secret, the bucket policy, and that the host clock is right", e);
            }
            if (status == 301 || status == 307 || "PermanentRedirect".equals(code) || "AuthorizationHeaderMalformed".equals(code)) {
                return new ImageFetchException("cannot " + what + " " + where + ": the server redirects (" + detail
                    + "); check the region and the path-style setting", e);
            }
            return new ImageFetchException("cannot " + what + " " + where + ": the server answered " + detail
                + "; check the S3 server's health and logs", e);
        }
        String hint = e instanceof SdkClientException && String.valueOf(e.getMessage()).contains("credentials")
            ? "give credentials in S3Settings, or set up the AWS default credential chain on this host"
            : "check that the endpoint is up and reachable from this host (connect timeout " + settings.connectTimeout()
                + ", read timeout " + settings.readTimeout() + ", " + settings.maxAttempts() + " attempts)";
        return new ImageFetchException("cannot " + what + " " + where + ": " + e.getMessage() + "; " + hint, e);
    }

    private static byte[] slice(byte[] data, long offset, int length) {
        if (offset >= data.length) {
            return new byte[0];
        }
        int n = (int) Math.min(length, data.length - offset);
        byte[] out = new byte[n];
        System.arraycopy(data, (int) offset, out, 0, n);
        return out;
    }
}
