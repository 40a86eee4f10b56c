package io.dsec.image.testing;

import io.dsec.image.BlobStores.S3Settings;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;

/**
 * An in-process S3 server for tests: s3proxy over its transient (in-memory) backend, listening on 127.0.0.1 on a
 * port the kernel picks, with AWS v2/v4 signatures checked against {@link #ACCESS_KEY}/{@link #SECRET_KEY}.
 */
public final class S3TestServer implements AutoCloseable {
    public static final String ACCESS_KEY = "dsec-test-access";
    public static final String SECRET_KEY = "dsec-test-secret";

    private final S3Proxy proxy;
    private final TransientNio2BlobStore backend;
    private final URI endpoint;
    private final AtomicInteger buckets = new AtomicInteger();

    private S3TestServer(S3Proxy proxy, TransientNio2BlobStore backend) {
        this.proxy = proxy;
        this.backend = backend;
        this.endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
    }

    public static S3TestServer start() throws Exception {
        TestLogging.quiet();
        TransientNio2BlobStore backend = new TransientNio2BlobStore();
        S3Proxy proxy = S3Proxy.builder()
            .blobStore(backend)
            .endpoint(URI.create("http://127.0.0.1:0"))
            .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
            .build();
        proxy.start(); // returns once the connector listens
        if (proxy.getPort() <= 0) {
            proxy.stop();
            throw new IllegalStateException("s3proxy did not report its port");
        }
        return new S3TestServer(proxy, backend);
    }

    public URI endpoint() {
        return endpoint;
    }

    /** Creates a new, empty bucket and returns its name. */
    public String newBucket() {
        String name = "dsec-test-" + buckets.incrementAndGet();
        backend.createContainer(name);
        return name;
    }

    /** Settings for {@code bucket} with the server's credentials and short timeouts. */
    public S3Settings settings(String bucket) {
        return S3Settings.of(endpoint, bucket).credentials(ACCESS_KEY, SECRET_KEY)
            .connectTimeout(Duration.ofSeconds(5)).readTimeout(Duration.ofSeconds(20));
    }

    @Override
    public void close() throws Exception {
        proxy.stop();
    }
}
