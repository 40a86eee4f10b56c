package io.dsec.image;

/** How a host brings a layer's data in before and while sandboxes use it. */
public enum LoadMode {
    /** Only metadata before the mount; chunks are fetched when the kernel reads them. The default. */
    ON_DEMAND,
    /** Every chunk is fetched into the host's cache before the layer is mounted: the baseline, and for users who want it. */
    FULL_PULL
}
