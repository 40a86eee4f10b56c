package io.dsec.image;

import io.dsec.ImageFetchException;

/** The store has no blob under the key. */
public class BlobNotFoundException extends ImageFetchException {
    private static final long serialVersionUID = 1L;
    private final String key;

    public BlobNotFoundException(String store, String key) {
        super("no blob " + key + " in " + store + ": it was never pushed there, or was garbage-collected; push the layer again");
        this.key = key;
    }

    public String key() {
        return key;
    }
}
