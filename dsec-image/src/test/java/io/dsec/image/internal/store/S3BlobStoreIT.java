package io.dsec.image.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.BlobStores.S3Settings;
import io.dsec.image.testing.S3TestServer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The contract against s3proxy (in-process, in-memory backend) on 127.0.0.1; a fresh bucket and prefix per test. */
class S3BlobStoreIT extends BlobStoreContract {
    private static S3TestServer server;
    private String bucket;
    private BlobStore store;

    @BeforeAll
    static void startServer() throws Exception {
        server = S3TestServer.start();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void open() {
        bucket = server.newBucket();
        store = BlobStores.s3(server.settings(bucket).prefix("dsec/"));
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Override
    protected BlobStore store() {
        return store;
    }

    @Test
    void keysLiveUnderThePrefixAndOtherPrefixesAreInvisible() {
        try (BlobStore bare = BlobStores.s3(server.settings(bucket));
             BlobStore other = BlobStores.s3(server.settings(bucket).prefix("other/"))) {
            store.put("chunks/sha256/a", new byte[] {1});
            other.put("chunks/sha256/b", new byte[] {2});

            assertThat(bare.list("")).containsExactly("dsec/chunks/sha256/a", "other/chunks/sha256/b");
            assertThat(store.list("")).containsExactly("chunks/sha256/a");
            assertThat(store.exists("chunks/sha256/b")).isFalse();
            assertThat(bare.get("dsec/chunks/sha256/a")).containsExactly(1);
        }
    }

    @Test
    void listingFollowsPages() {
        S3Settings settings = server.settings(bucket).prefix("paged/");
        try (S3BlobStore paged = new S3BlobStore(settings, 2)) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 7; i++) {
                keys.add("k/" + i);
                paged.put("k/" + i, new byte[] {(byte) i});
            }
            assertThat(paged.list("k/")).isEqualTo(keys);
        }
    }

    @Test
    void describeNamesEndpointBucketAndPrefix() {
        assertThat(store.describe()).isEqualTo("s3 " + server.endpoint() + "/" + bucket + "/dsec/");
    }

    @Test
    void aMissingBucketIsAnImageFetchExceptionNamingIt() {
        try (BlobStore s = BlobStores.s3(server.settings("no-such-bucket"))) {
            assertThatThrownBy(() -> s.get("k")).isInstanceOf(ImageFetchException.class)
                .isNotInstanceOf(BlobNotFoundException.class).hasMessageContaining("no-such-bucket");
            assertThatThrownBy(() -> s.put("k", new byte[] {1})).isInstanceOf(ImageFetchException.class)
                .hasMessageContaining("no-such-bucket");
        }
    }

    @Test
    void wrongCredentialsAreAccessDenied() {
        try (BlobStore s = BlobStores.s3(server.settings(bucket).credentials("dsec-test-access", "wrong").maxAttempts(1))) {
            assertThatThrownBy(() -> s.get("k")).isInstanceOf(ImageFetchException.class)
                .hasMessageContaining("access denied").hasMessageContaining("secret");
        }
    }
}
