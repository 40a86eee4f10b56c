package io.dsec.image.internal.gc;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Consumer;
import java.util.function.Predicate;

/** A BlobStore in memory for GC tests, with hooks on delete. */
final class GcTestStore implements BlobStore {
    final ConcurrentSkipListMap<String, byte[]> blobs = new ConcurrentSkipListMap<>();
    /** Runs after each delete. */
    volatile Consumer<String> afterDelete = k -> {
    };
    /** Deletes of keys it accepts fail. */
    volatile Predicate<String> failDelete = k -> false;

    @Override
    public byte[] get(String key) {
        byte[] b = blobs.get(key);
        if (b == null) {
            throw new BlobNotFoundException(describe(), key);
        }
        return b.clone();
    }

    @Override
    public byte[] getRange(String key, long offset, int length) {
        byte[] b = get(key);
        int from = (int) Math.min(offset, b.length);
        return Arrays.copyOfRange(b, from, (int) Math.min(b.length, offset + length));
    }

    @Override
    public boolean exists(String key) {
        return blobs.containsKey(key);
    }

    @Override
    public void put(String key, byte[] data) {
        blobs.put(key, data.clone());
    }

    @Override
    public List<String> list(String prefix) {
        return blobs.keySet().stream().filter(k -> k.startsWith(prefix)).sorted().toList();
    }

    @Override
    public void delete(String key) {
        if (failDelete.test(key)) {
            throw new ImageFetchException("cannot delete " + key + " from " + describe() + ": injected failure");
        }
        blobs.remove(key);
        afterDelete.accept(key);
    }

    @Override
    public boolean writable() {
        return true;
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
