package io.dsec.image.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import io.dsec.image.testing.NginxServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract against nginx (Debian nginx-light) on 127.0.0.1 serving a directory that a {@link DirectoryBlobStore}
 * writes: the seed hook. Each test gets a fresh subdirectory, served as its own base URL.
 */
class HttpBlobStoreIT extends BlobStoreContract {
    private static Path root;
    private static NginxServer nginx;
    private static int tests;
    private BlobStore writer;
    private BlobStore store;

    @BeforeAll
    static void startNginx() throws Exception {
        NginxServer.requireNginx();
        root = Files.createTempDirectory("dsec-http-blobs-");
        try {
            nginx = NginxServer.start(root);
        } catch (Exception e) {
            deleteTree(root);
            throw e;
        }
    }

    @AfterAll
    static void stopNginx() throws Exception {
        try {
            if (nginx != null) {
                nginx.close();
            }
        } finally {
            if (root != null) {
                deleteTree(root);
            }
        }
    }

    @BeforeEach
    void open() {
        String sub = "t" + (++tests);
        writer = BlobStores.directory(root.resolve(sub));
        store = BlobStores.http(nginx.base().resolve(sub), Duration.ofSeconds(5), Duration.ofSeconds(20));
    }

    @AfterEach
    void close() {
        store.close();
        writer.close();
    }

    @Override
    protected BlobStore store() {
        return store;
    }

    @Override
    protected BlobStore writer() {
        return writer;
    }

    @Test
    void theBaseGetsATrailingSlashAndDescribeNamesIt() {
        assertThat(store.describe()).isEqualTo("http " + nginx.base() + "t" + tests + "/");
        assertThat(store.writable()).isFalse();
    }

    @Test
    void listIsUnsupportedAndSaysWhere() {
        assertThatThrownBy(() -> store.list("")).isInstanceOf(DsecException.class).hasMessageContaining("directory or S3");
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception ignored) {
            // best effort
        }
    }
}
