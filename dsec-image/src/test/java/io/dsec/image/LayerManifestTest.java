package io.dsec.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dsec.ImageFetchException;
import io.dsec.LayerKind;
import io.dsec.image.LayerManifest.InvalidManifestException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LayerManifestTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String SOURCE = "layers/sha256/ab.json in s3 http://127.0.0.1:9000/bucket/";
    private static final String A = "a".repeat(64);
    private static final String B = "b".repeat(64);
    private static final String C = "0123456789abcdef".repeat(4);

    static LayerManifest sample() {
        return new LayerManifest(1, "sha256:" + C, LayerKind.WORKSPACE, "repo-x", "2024.1", 2L * 65536 + 100, 65536,
            List.of(A, B, A));
    }

    @Test
    void roundTrip() {
        LayerManifest m = sample();

        assertThat(LayerManifest.parse(m.toJson(), SOURCE)).isEqualTo(m);
    }

    @Test
    void theJsonIsCompactStableAndReadable() {
        String json = new String(sample().toJson(), StandardCharsets.UTF_8);

        assertThat(json).isEqualTo("{\"schemaVersion\":1,\"digest\":\"sha256:" + C + "\",\"kind\":\"workspace\",\"name\":\"repo-x\","
            + "\"version\":\"2024.1\",\"sizeBytes\":131172,\"chunkSize\":65536,\"chunks\":[\"" + A + "\",\"" + B + "\",\"" + A
            + "\"]}");
        assertThat(sample().toJson()).isEqualTo(sample().toJson());
    }

    @Test
    void unknownFieldsAreIgnoredAndKindIsCaseInsensitive() throws Exception {
        ObjectNode n = (ObjectNode) MAPPER.readTree(sample().toJson());
        n.put("createdBy", "a later dsec");
        n.put("kind", "WORKSPACE");

        assertThat(LayerManifest.parse(MAPPER.writeValueAsBytes(n), SOURCE)).isEqualTo(sample());
    }

    @Test
    void anEmptyImageHasNoChunks() {
        LayerManifest m = new LayerManifest(1, "sha256:" + C, LayerKind.BASE, "b", "1", 0, 65536, List.of());

        assertThat(LayerManifest.parse(m.toJson(), SOURCE)).isEqualTo(m);
    }

    static Stream<Arguments> badManifests() {
        return Stream.of(
            bad("json", "is not valid JSON", null, "{\"schemaVersion\":"),
            bad("json", "is not a JSON object", null, "[1,2]"),
            bad("schemaVersion", "schemaVersion 2 is not supported", n -> n.put("schemaVersion", 2), null),
            bad("schemaVersion", "schemaVersion is missing", n -> n.remove("schemaVersion"), null),
            bad("digest", "digest \"sha256:abc\" is not sha256:<64 lowercase hex>", n -> n.put("digest", "sha256:abc"), null),
            bad("digest", "is not sha256", n -> n.put("digest", C), null),
            bad("digest", "is not sha256", n -> n.put("digest", "sha256:" + C.toUpperCase()), null),
            bad("digest", "digest 7 is not a string", n -> n.put("digest", 7), null),
            bad("kind", "kind \"layer\" is not one of base, workspace, toolkit", n -> n.put("kind", "layer"), null),
            bad("name", "name is missing", n -> n.remove("name"), null),
            bad("version", "version is missing", n -> n.putNull("version"), null),
            bad("sizeBytes", "sizeBytes -1 is not a non-negative integer", n -> n.put("sizeBytes", -1), null),
            bad("sizeBytes", "sizeBytes 1.5 is not", n -> n.put("sizeBytes", 1.5), null),
            bad("chunkSize", "chunkSize 3000 is not a power of two", n -> n.put("chunkSize", 3000), null),
            bad("chunkSize", "chunkSize 4096 is outside", n -> n.put("chunkSize", 4096), null),
            bad("chunkSize", "chunkSize \"big\" is not an integer", n -> n.put("chunkSize", "big"), null),
            bad("chunks", "chunks[1] \"abc\" is not 64 lowercase hex characters", n -> ((ArrayNode) n.get("chunks")).set(1, "abc"), null),
            bad("chunks", "chunks[0] \"" + A.toUpperCase() + "\" is not 64", n -> ((ArrayNode) n.get("chunks")).set(0, A.toUpperCase()), null),
            bad("chunks", "chunks has 2 entries but sizeBytes 131172 in chunks of 65536 needs 3",
                n -> ((ArrayNode) n.get("chunks")).remove(2), null),
            bad("chunks", "chunks has 3 entries but sizeBytes 65536 in chunks of 65536 needs 1", n -> n.put("sizeBytes", 65536), null),
            bad("chunks", "chunks is not an array", n -> n.put("chunks", "x"), null));
    }

    private static Arguments bad(String field, String message, Consumer<ObjectNode> edit, String raw) {
        return Arguments.of(field, message, edit, raw);
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("badManifests")
    void eachBadFieldIsNamedWithWhereTheManifestCameFrom(String field, String message, Consumer<ObjectNode> edit, String raw)
        throws Exception {
        byte[] json;
        if (raw != null) {
            json = raw.getBytes(StandardCharsets.UTF_8);
        } else {
            ObjectNode n = (ObjectNode) MAPPER.readTree(sample().toJson());
            edit.accept(n);
            json = MAPPER.writeValueAsBytes(n);
        }

        assertThatThrownBy(() -> LayerManifest.parse(json, SOURCE))
            .isInstanceOf(ImageFetchException.class)
            .isInstanceOfSatisfying(InvalidManifestException.class, e -> assertThat(e.field()).isEqualTo(field))
            .hasMessageStartingWith("manifest " + SOURCE + ": ")
            .hasMessageContaining(message)
            .hasMessageContaining("push the layer again");
    }
}
