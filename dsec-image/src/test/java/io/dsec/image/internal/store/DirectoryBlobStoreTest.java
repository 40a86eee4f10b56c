package io.dsec.image.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.ImageFetchException;
import io.dsec.InvalidSpecException;
import io.dsec.image.BlobStore;
import io.dsec.image.BlobStores;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DirectoryBlobStoreTest extends BlobStoreContract {
    @TempDir
    Path dir;
    private BlobStore store;

    @BeforeEach
    void open() {
        store = BlobStores.directory(dir.resolve("blobs"), true);
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
    void blobsAreFilesUnderTheRootByKey() throws Exception {
        store.put("chunks/sha256/abc", new byte[] {1, 2});

        assertThat(Files.readAllBytes(dir.resolve("blobs/chunks/sha256/abc"))).containsExactly(1, 2);
    }

    @Test
    void putsLeaveNoTemporaryFilesAndListingSkipsStrayOnes() throws Exception {
        store.put("a/b", new byte[] {1});
        store.put("a/b", new byte[] {1});
        Files.write(dir.resolve("blobs/a/#tmp-deadbeef"), new byte[] {2}); // a temporary left by a crashed writer

        try (Stream<Path> files = Files.list(dir.resolve("blobs/a"))) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("b", "#tmp-deadbeef");
        }
        assertThat(store.list("a/")).containsExactly("a/b");
    }

    @Test
    void theRootIsCreatedAndARelativeRootIsMadeAbsolute() {
        Path root = dir.resolve("x/y/z");
        try (BlobStore s = BlobStores.directory(root)) {
            assertThat(Files.isDirectory(root)).isTrue();
            assertThat(s.describe()).isEqualTo("directory " + root);
        }
    }

    @Test
    void aRootThatIsAFileIsRejected() throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");

        assertThatThrownBy(() -> BlobStores.directory(file)).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("root")).hasMessageContaining(file.toString());
        assertThatThrownBy(() -> new DirectoryBlobStore(file.resolve("below"), false)).isInstanceOf(ImageFetchException.class)
            .hasMessageContaining(file.toString());
        assertThatThrownBy(() -> BlobStores.directory(null)).isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("root");
    }

    @Test
    void keysCannotEscapeTheRoot() throws Exception {
        Files.writeString(dir.resolve("secret"), "s");

        assertThatThrownBy(() -> store.get("../secret")).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> store.list("../")).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> store.list("/etc")).isInstanceOf(InvalidSpecException.class);
    }

    @Test
    void aDirectoryIsNotABlob() {
        store.put("d/e", new byte[] {1});

        assertThatThrownBy(() -> store.get("d")).isInstanceOf(io.dsec.image.BlobNotFoundException.class);
        assertThatThrownBy(() -> store.getRange("d", 0, 1)).isInstanceOf(io.dsec.image.BlobNotFoundException.class);
        store.delete("d");
        assertThat(store.list("")).isEqualTo(List.of("d/e"));
    }

    @Test
    void unreadableBlobsAreImageFetchExceptionsNamingTheKey() throws Exception {
        // A blob path whose parent is a file: the filesystem refuses with ENOTDIR, which means "absent".
        store.put("f", new byte[] {1});
        assertThatThrownBy(() -> store.get("f/g")).isInstanceOf(io.dsec.image.BlobNotFoundException.class);
        assertThatThrownBy(() -> store.put("f/g", new byte[] {1})).isInstanceOf(ImageFetchException.class)
            .hasMessageContaining("f/g").hasMessageContaining(store.describe());
    }
}
