package io.dsec.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.InvalidSpecException;
import io.dsec.image.BlobStores.S3Settings;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BlobStoresTest {
    @Test
    void settingsAreValidatedFieldByField() {
        URI ok = URI.create("http://127.0.0.1:9000");
        assertThatThrownBy(() -> S3Settings.of(null, "b")).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("endpoint"));
        assertThatThrownBy(() -> S3Settings.of(URI.create("ftp://h"), "bucket")).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("endpoint"));
        assertThatThrownBy(() -> S3Settings.of(URI.create("http://h:9000/bucket"), "bucket"))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("endpoint"));
        assertThatThrownBy(() -> S3Settings.of(ok, "B")).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("bucket"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").prefix("dsec")).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("prefix")).hasMessageContaining("dsec/");
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").prefix("/dsec/")).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").prefix("../")).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").region("US East")).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("region"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").credentials("a", null))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("secretKey"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").credentials("a", " "))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("secretKey"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").connectTimeout(Duration.ZERO))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("connectTimeout"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").readTimeout(Duration.ofHours(1)))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("readTimeout"));
        assertThatThrownBy(() -> S3Settings.of(ok, "bucket").maxAttempts(0))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("maxAttempts"));
        assertThatThrownBy(() -> BlobStores.s3(null)).isInstanceOf(InvalidSpecException.class);

        S3Settings s = S3Settings.of(URI.create("HTTP://127.0.0.1:9000/"), "bucket").credentials("id", "topsecret")
            .prefix("team/dsec/").pathStyle(false);
        assertThat(s.endpoint()).isEqualTo(ok);
        assertThat(s.prefix()).isEqualTo("team/dsec/");
        assertThat(s.pathStyle()).isFalse();
        assertThat(s.toString()).doesNotContain("topsecret");
    }

    @Test
    void badBaseUrlsAreRejected() {
        assertThatThrownBy(() -> BlobStores.http(null)).isInstanceOfSatisfying(InvalidSpecException.class,
            e -> assertThat(e.field()).isEqualTo("base"));
        assertThatThrownBy(() -> BlobStores.http(URI.create("file:///srv/blobs"))).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> BlobStores.http(URI.create("/relative"))).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> BlobStores.http(URI.create("http://127.0.0.1/x?y=1"))).isInstanceOf(InvalidSpecException.class);
        assertThatThrownBy(() -> BlobStores.http(URI.create("http://127.0.0.1/"), Duration.ZERO, Duration.ofSeconds(1)))
            .isInstanceOfSatisfying(InvalidSpecException.class, e -> assertThat(e.field()).isEqualTo("connectTimeout"));
    }

    @Test
    void s3SettingsDefaults() {
        S3Settings s = S3Settings.of(URI.create("http://127.0.0.1:9000"), "dsec");

        assertThat(s.region()).isEqualTo("us-east-1");
        assertThat(s.prefix()).isEmpty();
        assertThat(s.pathStyle()).isTrue();
        assertThat(s.accessKey()).isNull();
        assertThat(s.connectTimeout()).isEqualTo(BlobStores.DEFAULT_CONNECT_TIMEOUT);
        assertThat(s.readTimeout()).isEqualTo(BlobStores.DEFAULT_READ_TIMEOUT);
        assertThat(s.maxAttempts()).isEqualTo(3);
        assertThat(s.credentials("a", "b").defaultCredentials().secretKey()).isNull();
    }
}
