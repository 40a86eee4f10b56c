package io.dsec.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One benchmark's figures: a flat JSON object of metric name (units in the name) to number, plus the
 * {@code baseline}, {@code machine} and {@code date} strings, written to benchmarks/results/NAME.json.
 */
final class ResultFile {
    private final String name;
    private final String baseline;
    private final Map<String, Double> metrics = new LinkedHashMap<>();

    ResultFile(String name, String baseline) {
        this.name = name;
        this.baseline = baseline;
    }

    ResultFile put(String metric, double value) {
        metrics.put(metric, Math.round(value * 1000.0) / 1000.0);
        return this;
    }

    Path write(Path resultsDir) throws IOException {
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        metrics.forEach(root::put);
        root.put("baseline", baseline);
        root.put("machine", Machine.describe());
        root.put("date", LocalDate.now().toString());
        Files.createDirectories(resultsDir);
        Path file = resultsDir.resolve(name + ".json");
        mapper.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), root);
        System.out.println(name + ": " + mapper.writeValueAsString(root));
        return file;
    }
}
