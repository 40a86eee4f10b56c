/**
 * pack_diff snapshots and trajectory branching over the overlay uppers of dsec-core sandboxes. Put this module on the
 * classpath and {@code sandbox.snapshot()}, {@code host.branch(...)} and {@code host.snapshots()} work; see
 * {@link io.dsec.snapshot.PackDiffEngine}.
 */
package io.dsec.snapshot;
