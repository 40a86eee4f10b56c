package io.dsec.internal.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.HostResource;
import io.dsec.InvalidSpecException;
import io.dsec.Sandboxes;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The builder checks admission settings at once, naming the setting and the value. */
class AdmissionPolicyTest {

    private static void rejects(Executable call, String field, String value) {
        assertThatThrownBy(call::execute).isInstanceOf(InvalidSpecException.class)
            .satisfies(e -> assertThat(((InvalidSpecException) e).field()).isEqualTo(field))
            .hasMessageStartingWith(field + " = " + value + " is invalid: ");
    }

    @Test
    void overcommitRatiosBelowOneOrAbsurdAreRefused() {
        rejects(() -> Sandboxes.builder().memoryOvercommit(0.5), "overcommit(MEMORY)", "0.5");
        rejects(() -> Sandboxes.builder().cpuOvercommit(20000), "overcommit(CPU)", "20000.0");
        rejects(() -> Sandboxes.builder().overcommit(HostResource.PIDS, Double.NaN), "overcommit(PIDS)", "NaN");
        rejects(() -> Sandboxes.builder().overcommit(HostResource.DISK, 2), "overcommit.resource", "DISK");
        assertThatThrownBy(() -> Sandboxes.builder().memoryOvercommit(0.5)).hasMessageContaining("give a ratio of 1 or more");
        AdmissionPolicy p = AdmissionPolicy.DEFAULT.withOvercommit(HostResource.MEMORY, 1).withOvercommit(HostResource.CPU, 10000);
        assertThat(p.ratio(HostResource.MEMORY)).isEqualTo(1);
        assertThat(p.ratio(HostResource.CPU)).isEqualTo(10000);
        assertThat(p.ratio(HostResource.PIDS)).isEqualTo(1000);
    }

    @Test
    void headroomsAndEstimatesAreChecked() {
        rejects(() -> Sandboxes.builder().headroom(0.95), "headroom", "0.95");
        rejects(() -> Sandboxes.builder().headroom(-0.1), "headroom", "-0.1");
        rejects(() -> Sandboxes.builder().headroom("lots"), "headroom", "\"lots\"");
        rejects(() -> Sandboxes.builder().headroom("2p"), "headroom", "\"2p\"");
        rejects(() -> Sandboxes.builder().cpuHeadroom(1), "cpuHeadroom", "1.0");
        rejects(() -> Sandboxes.builder().diskHeadroom("-1g"), "diskHeadroom", "\"-1g\"");
        rejects(() -> Sandboxes.builder().expectedSandboxUse("64m", 1.5), "expectedSandboxUse.cpuFraction", "1.5");
        rejects(() -> Sandboxes.builder().expectedSandboxUse("2t", 0.1), "expectedSandboxUse.memory", "\"2t\"");
        assertThat(AdmissionPolicy.DEFAULT.withHeadroom("2g").headroomOf(24L << 30)).isEqualTo(2L << 30);
        assertThat(AdmissionPolicy.DEFAULT.withHeadroom(0.25).headroomOf(24L << 30)).isEqualTo(6L << 30);
        assertThat(AdmissionPolicy.DEFAULT.headroomOf(100)).isEqualTo(5);
        assertThat(AdmissionPolicy.DEFAULT.checksCpuUse()).isFalse();
        assertThat(AdmissionPolicy.DEFAULT.withCpuHeadroom(0).checksCpuUse()).isTrue();
    }

    @Test
    void queueSettingsAreChecked() {
        rejects(() -> Sandboxes.builder().maxCreationsInFlight(0), "maxCreationsInFlight", "0");
        rejects(() -> Sandboxes.builder().maxCreationsInFlight(5000), "maxCreationsInFlight", "5000");
        rejects(() -> Sandboxes.builder().admissionQueueLimit(-1), "admissionQueueLimit", "-1");
        rejects(() -> Sandboxes.builder().admissionQueueLimit(2_000_000), "admissionQueueLimit", "2000000");
        rejects(() -> Sandboxes.builder().admissionTimeout(Duration.ZERO), "admissionTimeout", "PT0S");
        rejects(() -> Sandboxes.builder().admissionTimeout(Duration.ofSeconds(-1)), "admissionTimeout", "PT-1S");
        rejects(() -> Sandboxes.builder().admissionTimeout(Duration.ofDays(2)), "admissionTimeout", "PT48H");
        rejects(() -> Sandboxes.builder().admissionTimeout(null), "admissionTimeout", "null");
        // valid settings chain
        Sandboxes.builder().memoryOvercommit(60).cpuOvercommit(4).headroom(0.1).maxCreationsInFlight(8).admissionQueueLimit(0)
            .admissionTimeout(Duration.ofSeconds(30)).expectedSandboxUse("128m", 0.1).diskHeadroom("1g").cpuHeadroom(0.2);
    }
}
