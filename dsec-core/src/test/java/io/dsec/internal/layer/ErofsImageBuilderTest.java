package io.dsec.internal.layer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.InvalidSpecException;
import io.dsec.LayerBuildException;
import io.dsec.MissingPrerequisiteException;
import io.dsec.spi.LayerStore.BuiltImage;
import io.dsec.testing.Capabilities;
import java.io.ByteArrayInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ErofsImageBuilderTest {
    @TempDir
    Path tmp;
    Path staging;
    ErofsImageBuilder builder;

    @BeforeEach
    void setUp() throws IOException {
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        staging = Files.createDirectories(tmp.resolve("staging"));
        builder = new ErofsImageBuilder();
    }

    @Test
    void sameTreeGivesSameDigestWhateverTheCreationOrder() throws Exception {
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.parse("2024-06-30T12:34:56Z"));
        Path b = LayerFixtures.tree(tmp.resolve("b"), true, Instant.parse("2024-06-30T12:34:56Z"));

        BuiltImage first = builder.fromDirectory(a, staging);
        BuiltImage second = builder.fromDirectory(b, staging);

        assertThat(second.digest()).isEqualTo(first.digest());
        assertThat(Files.mismatch(first.file(), second.file())).isEqualTo(-1L);
        assertThat(first.file()).isNotEqualTo(second.file());
    }

    @Test
    void mtimesArePartOfTheContent() throws Exception {
        // Kept, not erased: tools such as Python compare a cached .pyc with its source's mtime.
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.parse("2001-01-01T00:00:00Z"));
        Path b = LayerFixtures.tree(tmp.resolve("b"), false, Instant.parse("2024-06-30T12:34:56Z"));
        assertThat(builder.fromDirectory(b, staging).digest()).isNotEqualTo(builder.fromDirectory(a, staging).digest());
    }

    @Test
    void differentContentGivesDifferentDigest() throws Exception {
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.EPOCH);
        Path b = LayerFixtures.tree(tmp.resolve("b"), false, Instant.EPOCH);
        Files.writeString(b.resolve("a.txt"), "other content\n");
        Files.setLastModifiedTime(b.resolve("a.txt"), java.nio.file.attribute.FileTime.from(Instant.EPOCH));

        assertThat(builder.fromDirectory(b, staging).digest()).isNotEqualTo(builder.fromDirectory(a, staging).digest());
    }

    @Test
    void imageIsPaddedToTwoMebibytesAndTheDigestIsOfTheFileBytes() throws Exception {
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.EPOCH);
        Files.write(a.resolve("big"), new byte[3 << 20]);

        BuiltImage image = builder.fromDirectory(a, staging);

        assertThat(image.sizeBytes()).isPositive();
        assertThat(image.sizeBytes() % ErofsImageBuilder.ALIGNMENT).isZero();
        assertThat(image.sizeBytes()).isGreaterThanOrEqualTo(4L << 20);
        assertThat(Files.size(image.file())).isEqualTo(image.sizeBytes());
        assertThat(image.file().getParent()).isEqualTo(staging);
        byte[] bytes = Files.readAllBytes(image.file());
        assertThat("sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)))
            .isEqualTo(image.digest());
        assertThat(LayerMounts.hasErofsMagic(image.file())).isTrue();
    }

    @Test
    void missingMkfsSaysWhatToInstall() throws Exception {
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.EPOCH);
        ErofsImageBuilder missing = new ErofsImageBuilder(tmp.resolve("no/such/mkfs.erofs"));

        assertThatThrownBy(() -> missing.fromDirectory(a, staging))
            .isInstanceOf(MissingPrerequisiteException.class)
            .hasMessageContaining("mkfs.erofs not found: apt-get install erofs-utils");
        assertThatThrownBy(() -> missing.fromTar(new ByteArrayInputStream(new byte[0]), staging))
            .isInstanceOf(MissingPrerequisiteException.class);
    }

    @Test
    void mkfsFailureCarriesItsStderr() throws Exception {
        Path fake = tmp.resolve("mkfs.erofs");
        Files.writeString(fake, "#!/bin/sh\necho 'Could not format: disk on fire' >&2\nexit 1\n");
        Files.setAttribute(fake, "unix:mode", 0755);
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.EPOCH);

        assertThatThrownBy(() -> new ErofsImageBuilder(fake).fromDirectory(a, staging))
            .isInstanceOf(LayerBuildException.class)
            .hasMessageContaining("disk on fire");
        try (var left = Files.list(staging)) {
            assertThat(left).isEmpty();
        }
    }

    @Test
    void missingDirectoryOrFileIsAnInvalidSpec() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "x");

        assertThatThrownBy(() -> builder.fromDirectory(tmp.resolve("nope"), staging))
            .isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("directory")
            .hasMessageContaining(tmp.resolve("nope").toString())
            .satisfies(e -> assertThat(((InvalidSpecException) e).field()).isEqualTo("directory"));
        assertThatThrownBy(() -> builder.fromDirectory(file, staging))
            .isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("not a directory");
    }

    @Test
    void tarGivesTheSameDigestAsTheDirectoryAndLeavesTheStreamOpen() throws Exception {
        Path a = LayerFixtures.tree(tmp.resolve("a"), false, Instant.EPOCH);
        byte[] tar = LayerFixtures.tarOf(a);
        boolean[] closed = {false};
        ByteArrayInputStream bytes = new ByteArrayInputStream(tar);
        FilterInputStream stream = new FilterInputStream(bytes) {
            @Override
            public void close() throws IOException {
                closed[0] = true;
                super.close();
            }
        };

        BuiltImage fromTar = builder.fromTar(stream, staging);
        BuiltImage fromDir = builder.fromDirectory(a, staging);

        assertThat(fromTar.digest()).isEqualTo(fromDir.digest());
        assertThat(closed[0]).isFalse();
        assertThat(bytes.available()).isZero();
        try (var left = Files.list(staging)) {
            assertThat(left).containsExactlyInAnyOrder(fromTar.file(), fromDir.file()); // scratch tree is gone
        }
    }

    @Test
    void corruptTarIsALayerBuildException() throws Exception {
        byte[] garbage = new byte[64 << 10];
        new Random(42).nextBytes(garbage);

        assertThatThrownBy(() -> builder.fromTar(new ByteArrayInputStream(garbage), staging))
            .isInstanceOf(LayerBuildException.class)
            .hasMessageContaining("tar");
        try (var left = Files.list(staging)) {
            assertThat(left).isEmpty();
        }
    }
}
