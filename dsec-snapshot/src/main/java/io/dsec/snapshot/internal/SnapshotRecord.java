package io.dsec.snapshot.internal;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.NetworkPolicy;
import io.dsec.SandboxSpec;
import io.dsec.SnapshotTimings;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * A snapshot's manifest, the JSON document {@code snapshots/<id>.json} in the layer store. {@code layers} lists the
 * digest of every layer a branch needs (base, workspace, toolkit, the diff chain): a store garbage collector keeps them.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonInclude(JsonInclude.Include.NON_NULL)
record SnapshotRecord(int format, String id, String parent, String createdAt, String sourceSandbox, boolean squashed,
                      List<String> squashedFrom, ImageJson image, LayerJson diff, List<String> layers, SpecJson spec,
                      Map<String, String> labels, TimingsJson timings) {

    static final int FORMAT = 1;
    static final String PREFIX = "snapshots/";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    static String key(String id) {
        return PREFIX + id + ".json";
    }

    record LayerJson(String kind, String name, String version, String digest, long sizeBytes) {
        static LayerJson of(Layer l) {
            return l == null ? null : new LayerJson(l.kind().name(), l.name(), l.version(), l.digest(), l.sizeBytes());
        }

        Layer toLayer() {
            return new Layer(LayerKind.valueOf(kind), name, version, digest, sizeBytes);
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    record ImageJson(LayerJson base, LayerJson workspace, LayerJson toolkit, List<LayerJson> diffs) {
        static ImageJson of(Image image) {
            return new ImageJson(LayerJson.of(image.base()), LayerJson.of(image.workspace()), LayerJson.of(image.toolkit()),
                image.diffs().stream().map(LayerJson::of).toList());
        }

        Image toImage() {
            return new Image(base.toLayer(), workspace == null ? null : workspace.toLayer(), toolkit == null ? null : toolkit.toLayer(),
                diffs == null ? List.of() : diffs.stream().map(LayerJson::toLayer).toList());
        }
    }

    record SpecJson(long memoryBytes, double cpus, int pidsLimit, String hostname, Map<String, String> env, String workdir,
                    Map<String, String> labels, String network, String cpuClass, String tag, Integer priority) {
        static SpecJson of(SandboxSpec s) {
            return new SpecJson(s.memoryBytes(), s.cpus(), s.pidsLimit(), s.hostname(), s.env(), s.workdir(), s.labels(), s.network().name(),
                s.cpuClass().name(), s.tag(), s.priority());
        }

        /** Records written before classes and tags existed restore with the defaults. */
        SandboxSpec toSpec(Image image) {
            return new SandboxSpec(image, memoryBytes, cpus, pidsLimit, hostname, env == null ? Map.of() : env, workdir,
                labels == null ? Map.of() : labels, NetworkPolicy.valueOf(network),
                cpuClass == null ? io.dsec.CpuClass.NORMAL : io.dsec.CpuClass.valueOf(cpuClass), tag == null ? "default" : tag,
                priority == null ? 0 : priority);
        }
    }

    record TimingsJson(long pauseNanos, long totalNanos, long bytes, long entries, long diffBytes) {
        SnapshotTimings toTimings(boolean squashed) {
            return new SnapshotTimings(Duration.ofNanos(pauseNanos), Duration.ofNanos(totalNanos), bytes, entries, diffBytes, squashed);
        }
    }

    static List<String> layerDigests(Image image) {
        LinkedHashSet<String> digests = new LinkedHashSet<>();
        for (Layer l : image.layers()) {
            digests.add(l.digest());
        }
        return new ArrayList<>(digests);
    }

    byte[] toJson() {
        try {
            return JSON.writeValueAsBytes(this);
        } catch (IOException e) {
            throw new IllegalStateException("a snapshot record always serialises", e);
        }
    }

    static SnapshotRecord parse(byte[] json) throws IOException {
        return JSON.readValue(json, SnapshotRecord.class);
    }
}
