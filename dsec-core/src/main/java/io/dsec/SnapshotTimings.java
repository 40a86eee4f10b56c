package io.dsec;

import java.time.Duration;

/**
 * What taking a snapshot cost.
 *
 * @param pause     how long the source sandbox was frozen
 * @param total     from the call to the stored record, squash included
 * @param bytes     bytes of file data the diff captured (before the image was built)
 * @param entries   files, directories, links and whiteouts in the diff
 * @param diffBytes size of the diff layer image (padded)
 * @param squashed  true when the chain was squashed into one diff
 */
public record SnapshotTimings(Duration pause, Duration total, long bytes, long entries, long diffBytes, boolean squashed) {
}
