package io.dsec.image.internal.gc;

import io.dsec.ImageFetchException;
import io.dsec.image.testing.MemoryBlobStore;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Predicate;

/** The in-memory test store with hooks on delete, for GC tests. */
final class GcTestStore extends MemoryBlobStore {
    /** Runs after each delete. */
    volatile Consumer<String> afterDelete = k -> {
    };
    /** Deletes of keys it accepts fail. */
    volatile Predicate<String> failDelete = k -> false;

    @Override
    public void delete(String key) {
        if (failDelete.test(key)) {
            throw new ImageFetchException("cannot delete " + key + " from " + describe() + ": injected failure");
        }
        blobs.remove(key);
        afterDelete.accept(key);
    }

    @Override
    public String describe() {
        return "memory gc-test-store";
    }

    /** Every key and its bytes, for comparing before and after; without the GC's own keys. */
    Map<String, String> snapshot() {
        Map<String, String> m = new TreeMap<>();
        blobs.forEach((k, v) -> {
            if (!k.startsWith("gc/")) {
                m.put(k, Arrays.toString(v));
            }
        });
        return m;
    }

}
