package io.dsec.image.testing;

import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** A BlobStore in memory that counts gets and lets a test delay, fail or corrupt them; subclasses add delete hooks. */
public class MemoryBlobStore implements BlobStore {
    /** Runs inside get, before the bytes are returned; may block, throw, or return other bytes. */
    public interface GetHook {
        byte[] onGet(String key, byte[] bytes, int nthGetOfKey) throws Exception;
    }

    public final ConcurrentHashMap<String, byte[]> blobs = new ConcurrentHashMap<>();
    public final AtomicInteger gets = new AtomicInteger();
    public final ConcurrentHashMap<String, AtomicInteger> getsByKey = new ConcurrentHashMap<>();
    public final AtomicInteger concurrentGets = new AtomicInteger();
    public final AtomicInteger maxConcurrentGets = new AtomicInteger();
    public final List<String> getOrder = Collections.synchronizedList(new ArrayList<>());
    public volatile GetHook hook;

    @Override
    public byte[] get(String key) {
        int now = concurrentGets.incrementAndGet();
        maxConcurrentGets.accumulateAndGet(now, Math::max);
        try {
            gets.incrementAndGet();
            int nth = getsByKey.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            getOrder.add(key);
            byte[] b = blobs.get(key);
            if (b == null) {
                throw new BlobNotFoundException(describe(), key);
            }
            b = b.clone();
            GetHook h = hook;
            if (h != null) {
                try {
                    b = h.onGet(key, b, nth);
                } catch (RuntimeException e) {
                    throw e;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new io.dsec.ImageFetchException("interrupted", e);
                } catch (Exception e) {
                    throw new io.dsec.ImageFetchException("hook failed", e);
                }
            }
            return b;
        } finally {
            concurrentGets.decrementAndGet();
        }
    }

    public int getsOf(String key) {
        AtomicInteger n = getsByKey.get(key);
        return n == null ? 0 : n.get();
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
        blobs.remove(key);
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public String describe() {
        return "memory test-store";
    }
}
