/**
 * pack_diff snapshots and trajectory branching over the overlay uppers of dsec-core sandboxes. Filled by the snapshots issue.
 */
package io.dsec.snapshot;
