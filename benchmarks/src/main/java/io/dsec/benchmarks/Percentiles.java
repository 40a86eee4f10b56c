package io.dsec.benchmarks;

import java.util.Arrays;
import java.util.List;

/** Nearest-rank percentiles of a sample. */
final class Percentiles {
    private final double[] sorted;

    Percentiles(List<Double> values) {
        if (values.isEmpty()) {
            throw new IllegalArgumentException("no samples");
        }
        sorted = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(sorted);
    }

    double p(double percentile) {
        int rank = (int) Math.ceil(percentile / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    int count() {
        return sorted.length;
    }
}
