package io.dsec.internal.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.AdmissionException;
import io.dsec.AdmissionStats;
import io.dsec.HostResource;
import io.dsec.OciRuntime;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxSpec;
import io.dsec.testing.TestHost;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Admission on a real host: real sandboxes, real cgroups and /proc. */
class AdmissionIT {
    private static final int K = 2;

    @Test
    void admitsWhatFitsQueuesTheRestAndAdmitsTheNextWhenOneCloses() throws Exception {
        List<CompletableFuture<Sandbox>> creating = new ArrayList<>();
        try (TestHost t = TestHost.start(OciRuntime.AUTO, b -> b.cpuOvercommit(1).maxCreationsInFlight(1))) {
            double cores = t.host.admission().capacity().get(HostResource.CPU);
            // K of these fit in the host's cores (overcommit 1), K + 1 do not
            double each = Math.floor(cores / (K + 0.5) * 100) / 100;
            SandboxSpec spec = SandboxSpec.of(t.image()).memory("64m").cpus(each).tag("it");
            for (int i = 0; i < K + 3; i++) {
                creating.add(t.host.createAsync(spec.hostname("box" + i)));
            }
            for (int i = 0; i < K; i++) {
                assertThat(creating.get(i).get(60, TimeUnit.SECONDS).exec("hostname").stdoutText().trim()).isEqualTo("box" + i);
            }
            for (int i = K; i < K + 3; i++) {
                assertThat(creating.get(i)).isNotDone();
            }
            AdmissionStats s = t.host.admission();
            assertThat(s.queueLength()).isEqualTo(3);
            assertThat(s.holding()).isEqualTo(K);
            assertThat(s.inFlight()).isZero();
            assertThat(s.admitted()).isEqualTo(K);
            assertThat(s.queued()).isGreaterThanOrEqualTo(3);
            assertThat(s.allocated().get(HostResource.CPU)).isCloseTo(K * each, org.assertj.core.data.Offset.offset(1e-6));
            assertThat(s.used().get(HostResource.MEMORY)).isPositive();

            // larger than the whole host: fails at once, not queued
            long memTotal = s.capacity().get(HostResource.MEMORY).longValue();
            SandboxSpec huge = spec.memoryBytes(memTotal + (1L << 30));
            CompletableFuture<Sandbox> hugeAsync = t.host.createAsync(huge);
            assertThat(hugeAsync).isCompletedExceptionally();
            assertThatThrownBy(hugeAsync::join).isInstanceOf(CompletionException.class).cause()
                .isInstanceOf(AdmissionException.class).hasMessageContaining("larger than the whole host");
            assertThatThrownBy(() -> t.host.create(huge)).isInstanceOf(AdmissionException.class)
                .satisfies(e -> assertThat(((AdmissionException) e).reason()).isEqualTo(AdmissionException.Reason.LARGER_THAN_HOST));
            assertThat(t.host.admission().queueLength()).isEqualTo(3);
            assertThat(t.host.admission().rejectedByReason()).containsEntry(AdmissionException.Reason.LARGER_THAN_HOST, 2L);

            // closing one admits the next in line
            creating.get(0).join().close();
            Sandbox next = creating.get(K).get(60, TimeUnit.SECONDS);
            assertThat(next.exec("hostname").stdoutText().trim()).isEqualTo("box" + K);
            assertThat(creating.get(K + 1)).isNotDone();
            s = t.host.admission();
            assertThat(s.queueLength()).isEqualTo(2);
            assertThat(s.admitted()).isEqualTo(K + 1);
            assertThat(s.holding()).isEqualTo(K);
            assertThat(s.waitMax()).isPositive();
        }
        // closing the host rejected what still waited
        for (int i = K + 1; i < K + 3; i++) {
            CompletableFuture<Sandbox> f = creating.get(i);
            assertThat(f).isCompletedExceptionally();
            assertThatThrownBy(f::join).cause().isInstanceOf(SandboxClosedException.class);
        }
    }
}
