package io.dsec.image.internal.chunk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.InvalidSpecException;
import io.dsec.LayerBuildException;
import io.dsec.LayerKind;
import io.dsec.image.LayerManifest;
import io.dsec.spi.LayerStore.BuiltImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ChunkerTest {
    private static final int K64 = 64 * 1024;

    @TempDir
    Path dir;

    static String sha256(byte[] data, int from, int to) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(data, from, to - from);
        return HexFormat.of().formatHex(md.digest());
    }

    private Path image(byte[] data) throws Exception {
        return Files.write(Files.createTempFile(dir, "image", ".erofs"), data);
    }

    private static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void theImageDigestIsTheSha256OfTheFileAndEachChunkIsNamedByItsBytes() throws Exception {
        byte[] data = random(5 * K64, 1);
        LayerManifest m = new Chunker(K64).chunk(image(data), LayerKind.BASE, "debian", "12");

        assertThat(m.digest()).isEqualTo("sha256:" + sha256(data, 0, data.length));
        assertThat(m.sizeBytes()).isEqualTo(data.length);
        assertThat(m.chunkSize()).isEqualTo(K64);
        assertThat(m.schemaVersion()).isEqualTo(LayerManifest.SCHEMA_VERSION);
        assertThat(m.kind()).isEqualTo(LayerKind.BASE);
        assertThat(m.name()).isEqualTo("debian");
        assertThat(m.version()).isEqualTo("12");
        assertThat(m.chunks()).hasSize(5);
        for (int i = 0; i < 5; i++) {
            assertThat(m.chunks().get(i)).isEqualTo(sha256(data, i * K64, (i + 1) * K64));
        }
    }

    @Test
    void theLastChunkMayBeShort() throws Exception {
        byte[] data = random(3 * K64 + 1000, 2);
        LayerManifest m = new Chunker(K64).chunk(image(data), LayerKind.WORKSPACE, "w", "1");

        assertThat(m.chunkCount()).isEqualTo(4);
        assertThat(m.chunkLength(3)).isEqualTo(1000);
        assertThat(m.chunkOffset(3)).isEqualTo(3L * K64);
        assertThat(m.chunks().get(3)).isEqualTo(sha256(data, 3 * K64, data.length));
        assertThat(m.digest()).isEqualTo("sha256:" + sha256(data, 0, data.length));
    }

    @Test
    void anImageOfWholeChunksHasNoEmptyTrailingChunk() throws Exception {
        byte[] data = random(2 * 1024 * 1024, 3);
        LayerManifest m = new Chunker(512 * 1024).chunk(image(data), LayerKind.TOOLKIT, "t", "1");

        assertThat(m.chunkCount()).isEqualTo(4);
        assertThat(m.chunkLength(3)).isEqualTo(512 * 1024);
    }

    @Test
    void identicalChunksHaveIdenticalNames() throws Exception {
        byte[] data = new byte[4 * K64];
        byte[] block = random(K64, 4);
        System.arraycopy(block, 0, data, 0, K64);
        System.arraycopy(block, 0, data, 2 * K64, K64);
        LayerManifest m = new Chunker(K64).chunk(image(data), LayerKind.BASE, "b", "1");

        assertThat(m.chunks().get(0)).isEqualTo(m.chunks().get(2));
        assertThat(m.chunks().get(1)).isEqualTo(m.chunks().get(3)).isEqualTo(sha256(new byte[K64], 0, K64));
    }

    @Test
    void anEmptyImageHasNoChunks() throws Exception {
        LayerManifest m = new Chunker().chunk(image(new byte[0]), LayerKind.BASE, "b", "1");

        assertThat(m.chunks()).isEmpty();
        assertThat(m.digest()).isEqualTo("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    @Test
    void theManifestSurvivesItsJson() throws Exception {
        byte[] data = random(3 * K64 + 5, 5);
        LayerManifest m = new Chunker(K64).chunk(image(data), LayerKind.BASE, "b", "1");

        assertThat(LayerManifest.parse(m.toJson(), "test")).isEqualTo(m);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, -1, 1, 4096, 32 * 1024, 100_000, 3 * 64 * 1024, 4 * 1024 * 1024})
    void chunkSizesOtherThanPowersOfTwoFrom64KiBTo2MiBAreRejected(int size) {
        assertThatThrownBy(() -> new Chunker(size)).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("chunkSize")).hasMessageContaining(String.valueOf(size));
    }

    @Test
    void theDefaultChunkSizeIsAValidOne() {
        assertThat(new Chunker().chunkSize()).isEqualTo(Chunker.DEFAULT_CHUNK_SIZE);
        assertThat(Arrays.asList(64 * 1024, 2 * 1024 * 1024)).allSatisfy(s -> assertThat(new Chunker(s).chunkSize()).isEqualTo(s));
    }

    @Test
    void aBuiltImageMustMatchItsDigest() throws Exception {
        byte[] data = random(K64, 6);
        Path file = image(data);
        String digest = "sha256:" + sha256(data, 0, data.length);

        assertThat(new Chunker(K64).chunk(new BuiltImage(file, digest, data.length), LayerKind.BASE, "b", "1").digest())
            .isEqualTo(digest);
        assertThatThrownBy(() -> new Chunker(K64).chunk(new BuiltImage(file, "sha256:" + "0".repeat(64), data.length),
            LayerKind.BASE, "b", "1")).isInstanceOf(LayerBuildException.class).hasMessageContaining(digest);
    }

    @Test
    void aMissingImageIsALayerBuildExceptionNamingIt() {
        Path missing = dir.resolve("missing.erofs");

        assertThatThrownBy(() -> new Chunker().chunk(missing, LayerKind.BASE, "b", "1")).isInstanceOf(LayerBuildException.class)
            .hasMessageContaining(missing.toString());
    }
}
