package io.dsec.image.internal.cache;

import io.dsec.image.testing.MemoryBlobStore;
import io.dsec.LayerKind;
import io.dsec.image.LayerManifest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/** A random layer image cut into chunks and pushed to a store. */
final class TestLayer {
    final byte[] image;
    final LayerManifest manifest;

    TestLayer(MemoryBlobStore store, int size, int chunkSize, long seed) {
        image = new byte[size];
        new Random(seed).nextBytes(image);
        List<String> chunks = new ArrayList<>();
        for (int off = 0; off < size; off += chunkSize) {
            byte[] chunk = Arrays.copyOfRange(image, off, Math.min(size, off + chunkSize));
            String hex = ChunkCache.sha256Hex(chunk);
            chunks.add(hex);
            store.put(LayerManifest.chunkKey(hex), chunk);
        }
        manifest = new LayerManifest(LayerManifest.SCHEMA_VERSION, "sha256:" + ChunkCache.sha256Hex(image),
            LayerKind.BASE, "test", "1", size, chunkSize, chunks);
    }

    String key(int index) {
        return LayerManifest.chunkKey(manifest.chunks().get(index));
    }

    byte[] chunk(int index) {
        long off = manifest.chunkOffset(index);
        return Arrays.copyOfRange(image, (int) off, (int) off + manifest.chunkLength(index));
    }
}
