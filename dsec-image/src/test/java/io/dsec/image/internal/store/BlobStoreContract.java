package io.dsec.image.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.DsecException;
import io.dsec.InvalidSpecException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What every {@link BlobStore} does. A subclass opens a fresh, empty store per test. Reads go through
 * {@link #store()}; writes go through {@link #writer()}, the seed hook: the store itself when it is writable, or the
 * writable store behind a read-only one (the directory nginx serves, for HTTP).
 */
public abstract class BlobStoreContract {
    /** The store under test, empty at the start of each test. */
    protected abstract BlobStore store();

    /** Where the tests write; override for a read-only store. */
    protected BlobStore writer() {
        return store();
    }

    protected static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void putThenGetReturnsTheBytes() {
        byte[] small = "hello, blob".getBytes(StandardCharsets.UTF_8);
        byte[] large = random(3 * 1024 * 1024 + 17, 1);
        writer().put("chunks/sha256/small", small);
        writer().put("chunks/sha256/large", large);

        assertThat(store().get("chunks/sha256/small")).isEqualTo(small);
        assertThat(store().get("chunks/sha256/large")).isEqualTo(large);
    }

    @Test
    void getRangeReadsStartMiddleAndEndAndFewerBytesPastTheEnd() {
        byte[] data = random(1000, 2);
        writer().put("blob", data);

        assertThat(store().getRange("blob", 0, 100)).isEqualTo(Arrays.copyOfRange(data, 0, 100));
        assertThat(store().getRange("blob", 450, 100)).isEqualTo(Arrays.copyOfRange(data, 450, 550));
        assertThat(store().getRange("blob", 900, 100)).isEqualTo(Arrays.copyOfRange(data, 900, 1000));
        assertThat(store().getRange("blob", 950, 100)).isEqualTo(Arrays.copyOfRange(data, 950, 1000));
        assertThat(store().getRange("blob", 999, 1)).isEqualTo(new byte[] {data[999]});
        assertThat(store().getRange("blob", 0, 1000)).isEqualTo(data);
        assertThat(store().getRange("blob", 0, 5000)).isEqualTo(data);
        assertThat(store().getRange("blob", 1000, 10)).isEmpty();
        assertThat(store().getRange("blob", 5000, 10)).isEmpty();
        assertThat(store().getRange("blob", 10, 0)).isEmpty();
    }

    @Test
    void getRangeInALargeBlob() {
        byte[] data = random(3 * 1024 * 1024, 3);
        writer().put("large", data);
        int off = 2 * 1024 * 1024 + 12345;

        assertThat(store().getRange("large", off, 512 * 1024)).isEqualTo(Arrays.copyOfRange(data, off, off + 512 * 1024));
    }

    @Test
    void emptyBlob() {
        writer().put("empty", new byte[0]);

        assertThat(store().exists("empty")).isTrue();
        assertThat(store().get("empty")).isEmpty();
        assertThat(store().getRange("empty", 0, 10)).isEmpty();
    }

    @Test
    void existsFollowsPutAndDelete() {
        assertThat(store().exists("layers/sha256/a.json")).isFalse();
        writer().put("layers/sha256/a.json", new byte[] {1});
        assertThat(store().exists("layers/sha256/a.json")).isTrue();
        writer().delete("layers/sha256/a.json");
        assertThat(store().exists("layers/sha256/a.json")).isFalse();
        assertThatThrownBy(() -> store().get("layers/sha256/a.json")).isInstanceOf(BlobNotFoundException.class);
    }

    @Test
    void deleteOfAnAbsentKeyIsNoError() {
        assertThatCode(() -> writer().delete("never/written")).doesNotThrowAnyException();
    }

    @Test
    void aMissingKeyIsBlobNotFoundNamingKeyAndStore() {
        assertThatThrownBy(() -> store().get("chunks/sha256/missing"))
            .isInstanceOfSatisfying(BlobNotFoundException.class, e -> assertThat(e.key()).isEqualTo("chunks/sha256/missing"))
            .hasMessageContaining("chunks/sha256/missing").hasMessageContaining(store().describe());
        assertThatThrownBy(() -> store().getRange("chunks/sha256/missing", 0, 10)).isInstanceOf(BlobNotFoundException.class);
        assertThatThrownBy(() -> store().getRange("chunks/sha256/missing", 0, 0)).isInstanceOf(BlobNotFoundException.class);
    }

    @Test
    void aKeyThatIsOnlyAPrefixOfOthersIsNotABlob() {
        writer().put("dir/blob", new byte[] {1});

        assertThat(store().exists("dir")).isFalse();
    }

    @Test
    void listReturnsTheKeysWithThePrefixSorted() {
        if (!store().writable()) {
            assertThatThrownBy(() -> store().list("")).isInstanceOf(DsecException.class);
            return;
        }
        for (String k : List.of("t/b/2", "t/a/10", "t/c", "t/a/1", "u/x", "t.json")) {
            writer().put(k, k.getBytes(StandardCharsets.UTF_8));
        }

        assertThat(store().list("t/a/")).containsExactly("t/a/1", "t/a/10");
        assertThat(store().list("t/a")).containsExactly("t/a/1", "t/a/10");
        assertThat(store().list("t/a/1")).containsExactly("t/a/1", "t/a/10");
        assertThat(store().list("t/")).containsExactly("t/a/1", "t/a/10", "t/b/2", "t/c");
        assertThat(store().list("t")).containsExactly("t.json", "t/a/1", "t/a/10", "t/b/2", "t/c");
        assertThat(store().list("")).containsExactly("t.json", "t/a/1", "t/a/10", "t/b/2", "t/c", "u/x");
        assertThat(store().list("nothing/")).isEmpty();
        writer().delete("t/a/1");
        assertThat(store().list("t/a/")).containsExactly("t/a/10");
    }

    @Test
    void concurrentPutsOfOneKeyLeaveOneIntactBlob() throws Exception {
        int threads = 8;
        List<byte[]> payloads = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            payloads.add(random(1024 * 1024 + i, 100 + i));
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch ready = new CountDownLatch(threads);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> futures = new ArrayList<>();
            for (byte[] payload : payloads) {
                futures.add(pool.submit(() -> {
                    ready.countDown();
                    go.await();
                    writer().put("chunks/sha256/same", payload);
                    return null;
                }));
            }
            ready.await();
            go.countDown();
            for (Future<?> f : futures) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }

        byte[] stored = store().get("chunks/sha256/same");
        assertThat(payloads).anySatisfy(p -> assertThat(p).isEqualTo(stored));
        if (store().writable()) {
            assertThat(store().list("chunks/")).containsExactly("chunks/sha256/same");
        }
    }

    @Test
    void concurrentReadersAndWritersOfDifferentKeys() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                int n = i;
                futures.add(pool.submit(() -> {
                    byte[] data = random(64 * 1024, n);
                    writer().put("k/" + n, data);
                    assertThat(store().get("k/" + n)).isEqualTo(data);
                    assertThat(store().getRange("k/" + n, 1000, 10)).isEqualTo(Arrays.copyOfRange(data, 1000, 1010));
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void writingAKeyAgainWithTheSameBytesIsFine() {
        byte[] data = random(5000, 4);
        writer().put("again", data);
        writer().put("again", data);

        assertThat(store().get("again")).isEqualTo(data);
    }

    static Stream<String> badKeys() {
        return Stream.of("", "/abs", "a/../b", "..", "../a", "a/..", ".", "./a", "a/./b", "A", "a b", "a//b", "a/", "a\\b",
            "a:b", "a?b", "a#b", "a%2fb", "ä", "x".repeat(256), ("x".repeat(200) + "/").repeat(2) + "x".repeat(111));
    }

    @ParameterizedTest
    @MethodSource("badKeys")
    void badKeysAreRejected(String key) {
        assertThatThrownBy(() -> store().get(key)).isInstanceOf(InvalidSpecException.class).hasMessageContaining("key");
        assertThatThrownBy(() -> store().getRange(key, 0, 1)).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> store().exists(key)).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> writer().put(key, new byte[] {1})).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> writer().delete(key)).isInstanceOf(InvalidSpecException.class);
    }

    @Test
    void aNullKeyIsRejected() {
        assertThatThrownBy(() -> store().get(null)).isInstanceOf(InvalidSpecException.class);
    }

    @Test
    void theLongestValidKeyWorks() {
        String key = "x".repeat(254) + "/" + "y".repeat(255) + "/z";
        assertThat(key).hasSize(Keys.MAX_LENGTH);
        writer().put(key, new byte[] {7});

        assertThat(store().get(key)).containsExactly(7);
    }

    @Test
    void negativeRangesAreRejected() {
        writer().put("blob", new byte[] {1, 2, 3});

        assertThatThrownBy(() -> store().getRange("blob", -1, 1)).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> store().getRange("blob", 0, -1)).isInstanceOf(InvalidSpecException.class);
    }

    @Test
    void aReadOnlyStoreRefusesWritesAWritableOneTakesThem() {
        if (store().writable()) {
            store().put("w", new byte[] {9});
            assertThat(store().get("w")).containsExactly(9);
        } else {
            assertThatThrownBy(() -> store().put("w", new byte[] {9})).isInstanceOf(DsecException.class)
                .hasMessageContaining("read-only");
            assertThatThrownBy(() -> store().delete("w")).isInstanceOf(DsecException.class).hasMessageContaining("read-only");
            assertThat(store().exists("w")).isFalse();
        }
    }

    @Test
    void describeSaysWhatKindOfStoreAndWhere() {
        assertThat(store().describe()).matches("(directory|s3|http) .+");
    }
}
