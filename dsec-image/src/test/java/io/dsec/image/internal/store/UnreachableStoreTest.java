package io.dsec.image.internal.store;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.BlobStores.S3Settings;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * S3 and HTTP stores whose endpoint is down (a closed port on 127.0.0.1) or never answers (a socket nobody accepts on:
 * the kernel completes the connection into the backlog) fail with {@link ImageFetchException}s, not hangs. The
 * preemptive timeouts are generous bounds against hanging only; what is tested is the failure and its message.
 */
class UnreachableStoreTest {
    @org.junit.jupiter.api.BeforeAll
    static void quietLogs() {
        io.dsec.image.testing.TestLogging.quiet();
    }
    @Test
    void s3OnAClosedPortIsAnImageFetchExceptionNamingEndpointBucketAndKey() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        URI endpoint = URI.create("http://127.0.0.1:" + port);
        S3Settings settings = S3Settings.of(endpoint, "dsec").credentials("a", "b")
            .connectTimeout(Duration.ofSeconds(2)).readTimeout(Duration.ofSeconds(2));
        try (BlobStore s = BlobStores.s3(settings)) {
            // A generous bound only against hanging; the failure itself is what is tested.
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                assertThatThrownBy(() -> s.get("chunks/sha256/x")).isInstanceOf(ImageFetchException.class)
                    .isNotInstanceOf(BlobNotFoundException.class)
                    .hasMessageContaining(endpoint.toString()).hasMessageContaining("bucket dsec")
                    .hasMessageContaining("chunks/sha256/x").hasMessageContaining("reachable");
                assertThatThrownBy(() -> s.exists("chunks/sha256/x")).isInstanceOf(ImageFetchException.class);
                assertThatThrownBy(() -> s.put("chunks/sha256/x", new byte[] {1})).isInstanceOf(ImageFetchException.class);
            });
        }
    }

    @Test
    void s3OnAServerThatNeverAnswersIsAnImageFetchExceptionAfterTheReadTimeout() throws Exception {
        // The kernel completes connections into the backlog; nobody accepts or answers.
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            URI endpoint = URI.create("http://127.0.0.1:" + silent.getLocalPort());
            S3Settings settings = S3Settings.of(endpoint, "dsec").credentials("a", "b").maxAttempts(1)
                .connectTimeout(Duration.ofSeconds(2)).readTimeout(Duration.ofSeconds(1));
            try (BlobStore s = BlobStores.s3(settings)) {
                assertTimeoutPreemptively(Duration.ofSeconds(60), () ->
                    assertThatThrownBy(() -> s.get("k")).isInstanceOf(ImageFetchException.class)
                        .hasMessageContaining(endpoint.toString()).hasMessageContaining("read timeout PT1S"));
            }
        }
    }

    @Test
    void httpOnAClosedPortIsAnImageFetchExceptionNamingTheUrl() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        URI base = URI.create("http://127.0.0.1:" + port + "/blobs/");
        try (BlobStore s = BlobStores.http(base, Duration.ofSeconds(2), Duration.ofSeconds(2))) {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                assertThatThrownBy(() -> s.get("chunks/sha256/x")).isInstanceOf(ImageFetchException.class)
                    .isNotInstanceOf(BlobNotFoundException.class)
                    .hasMessageContaining(base + "chunks/sha256/x").hasMessageContaining("reachable");
                assertThatThrownBy(() -> s.exists("chunks/sha256/x")).isInstanceOf(ImageFetchException.class);
                assertThatThrownBy(() -> s.getRange("chunks/sha256/x", 0, 10)).isInstanceOf(ImageFetchException.class);
            });
        }
    }

    @Test
    void httpOnAServerThatNeverAnswersIsAnImageFetchExceptionAfterTheReadTimeout() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            URI base = URI.create("http://127.0.0.1:" + silent.getLocalPort() + "/");
            try (BlobStore s = BlobStores.http(base, Duration.ofSeconds(2), Duration.ofSeconds(1))) {
                assertTimeoutPreemptively(Duration.ofSeconds(60), () ->
                    assertThatThrownBy(() -> s.get("k")).isInstanceOf(ImageFetchException.class)
                        .hasMessageContaining("no answer within PT1S"));
            }
        }
    }
}
