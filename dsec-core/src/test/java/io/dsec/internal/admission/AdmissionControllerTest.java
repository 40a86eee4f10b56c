package io.dsec.internal.admission;

import static io.dsec.internal.admission.FakeUsage.GIB;
import static io.dsec.internal.admission.FakeUsage.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.AdmissionException;
import io.dsec.AdmissionException.Reason;
import io.dsec.AdmissionStats;
import io.dsec.HostResource;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class AdmissionControllerTest {
    private static final Image IMAGE = Image.of(new Layer(LayerKind.BASE, "base", "1", "sha256:" + "a".repeat(64), 2 << 20));
    private final FakeUsage usage = new FakeUsage();
    private final FakeUsage.MovableClock clock = new FakeUsage.MovableClock();
    private AdmissionController controller;

    @AfterEach
    void close() {
        if (controller != null) {
            controller.close();
        }
    }

    private AdmissionController controller(UnaryOperator<AdmissionPolicy> policy) {
        controller = new AdmissionController(policy.apply(AdmissionPolicy.DEFAULT), usage, clock, Ticker.manual());
        return controller;
    }

    private static SandboxSpec spec(String memory, double cpus) {
        return SandboxSpec.of(IMAGE).memory(memory).cpus(cpus).pids(64);
    }

    private static AdmissionException failure(CompletableFuture<?> f) {
        assertThat(f).isCompletedExceptionally();
        Throwable t = f.handle((v, e) -> e).join();
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        assertThat(t).isInstanceOf(AdmissionException.class);
        return (AdmissionException) t;
    }

    @Test
    void admitsAllocationsUpToTheOvercommitRatioThenQueues() {
        AdmissionController c = controller(p -> p.withOvercommit(HostResource.MEMORY, 1));
        var a = c.submit(spec("10g", 0.1));
        var b = c.submit(spec("10g", 0.1));
        var third = c.submit(spec("10g", 0.1));
        assertThat(a).isCompleted();
        assertThat(b).isCompleted();
        assertThat(third).isNotDone();
        assertThat(c.stats().queueLength()).isEqualTo(1);
        a.join().release();
        assertThat(third).isCompleted();
        assertThat(c.stats().allocated().get(HostResource.MEMORY)).isEqualTo(20.0 * GIB);
    }

    @Test
    void overcommitRejectionSaysWhichResourceAndByHowMuch() {
        AdmissionController c = controller(p -> p.withOvercommit(HostResource.MEMORY, 1).withQueueLimit(0));
        c.submit(spec("10g", 0.1)).join();
        c.submit(spec("10g", 0.1)).join();
        AdmissionException e = failure(c.submit(spec("10g", 0.1)));
        assertThat(e.reason()).isEqualTo(Reason.OVERCOMMIT);
        assertThat(e.resource()).contains(HostResource.MEMORY);
        assertThat(e.wanted()).isEqualTo(30.0 * GIB);
        assertThat(e.limit()).isEqualTo(24.0 * GIB);
        assertThat(e.getMessage()).startsWith("memory: admitting 10.0 GiB more allocation would make 1.3x of 24.0 GiB, over the "
            + "overcommit ratio 1x; raise Sandboxes.builder().overcommit(HostResource.MEMORY, ...) or close sandboxes");
    }

    @Test
    void cpuAndPidsAllocationsHaveTheirOwnRatios() {
        AdmissionController c = controller(p -> p.withOvercommit(HostResource.CPU, 2).withOvercommit(HostResource.PIDS, 1).withQueueLimit(0));
        c.submit(spec("64m", 2)).join();
        c.submit(spec("64m", 1.5)).join();
        AdmissionException cpu = failure(c.submit(spec("64m", 1)));
        assertThat(cpu.resource()).contains(HostResource.CPU);
        assertThat(cpu.getMessage()).contains("cpu: admitting 1.00 cores more allocation would make 2.3x of 2.00 cores, over the overcommit ratio 2x");
        c.submit(spec("64m", 0.1).pids(32768 - 128)).join();
        AdmissionException pids = failure(c.submit(spec("64m", 0.1).pids(100)));
        assertThat(pids.resource()).contains(HostResource.PIDS);
        assertThat(pids.getMessage()).startsWith("pids: admitting 100 more pids of allocation");
    }

    @Test
    void projectedRealUseMustLeaveTheHeadroomFree() {
        usage.memoryUsed = 19 * GIB;
        AdmissionController c = controller(p -> p.withHeadroom(0.2).withExpectedUse("512m", 0.05));
        // 19 GiB used + 512 MiB expected = 19.5 GiB > 24 GiB - 4.8 GiB = 19.2 GiB
        var f = c.submit(spec("1g", 1));
        assertThat(f).isNotDone();
        assertThat(c.stats().queueLength()).isEqualTo(1);
        usage.memoryUsed = 18 * GIB;
        c.tick(); // real use dropped: the tick re-evaluates the queue
        assertThat(f).isCompleted();

        // the creation in flight counts with its expected use until it is created
        usage.memoryUsed = 18 * GIB + 600 * MIB;
        AdmissionController.Permit first = f.join();
        controller.close();
        AdmissionController d = controller(p -> p.withHeadroom("5g").withExpectedUse("256m", 0.05).withQueueLimit(0));
        d.submit(spec("1g", 1)).join(); // 18.6 + 0.25 <= 19
        AdmissionException e = failure(d.submit(spec("1g", 1))); // 18.6 + 0.25 + 0.25 > 19
        assertThat(e.reason()).isEqualTo(Reason.REAL_USE);
        assertThat(e.resource()).contains(HostResource.MEMORY);
        assertThat(e.getMessage()).contains("memory: projected real use 19.1 GiB (18.6 GiB in use on the host, 256.0 MiB expected of 1 "
            + "creations in flight, 256.0 MiB expected of this sandbox) would exceed 19.0 GiB, the host's 24.0 GiB minus the headroom 5.0 GiB");
        first.release();
    }

    @Test
    void theExpectedUseIsTheRunningSandboxesAverageWhenHigher() {
        usage.memoryUsed = 10 * GIB;
        AdmissionController c = controller(p -> p.withHeadroom("5g").withExpectedUse("64m", 0.05).withQueueLimit(0));
        AdmissionController.Permit a = c.submit(spec("8g", 1)).join();
        a.created(List.of(Path.of("/cg/a")));
        usage.sandbox(Path.of("/cg/a"), 5 * GIB, 0);
        c.tick(); // samples: the average sandbox uses 5 GiB
        // 10 GiB used + 5 GiB expected = 15 <= 19
        AdmissionController.Permit b = c.submit(spec("8g", 1)).join();
        // 10 + 5 (in flight) + 5 > 19; a small spec is expected to use at most its limit: 10 + 5 + 1 <= 19
        assertThat(failure(c.submit(spec("8g", 1))).reason()).isEqualTo(Reason.REAL_USE);
        c.submit(spec("1g", 1)).join();
        b.release();
        a.release();
    }

    @Test
    void cpuRealUseIsCheckedWhenACpuHeadroomIsSet() {
        AdmissionController c = controller(p -> p.withCpuHeadroom(0.25));
        AdmissionController.Permit a = c.submit(spec("64m", 1)).join();
        a.created(List.of(Path.of("/cg/a")));
        usage.sandbox(Path.of("/cg/a"), 10 * MIB, 0);
        c.tick();
        clock.advance(Duration.ofSeconds(2));
        usage.sandbox(Path.of("/cg/a"), 10 * MIB, 2_800_000_000L); // 1.4 cores over 2 s
        c.tick();
        assertThat(c.stats().used().get(HostResource.CPU)).isCloseTo(1.4, org.assertj.core.data.Offset.offset(1e-9));
        // 1.4 used + max(5% of 1 core, the average 1.4 capped at its 1 core) > 1.5
        var waiting = c.submit(spec("64m", 1));
        assertThat(waiting).isNotDone();
        clock.advance(Duration.ofSeconds(2));
        usage.sandbox(Path.of("/cg/a"), 10 * MIB, 2_800_000_000L); // idle now
        c.tick();
        assertThat(waiting).isCompleted();
    }

    @Test
    void diskHeadroomIsKeptFree() {
        usage.diskFree = 300 * MIB;
        AdmissionController c = controller(p -> p.withQueueLimit(0));
        AdmissionException e = failure(c.submit(spec("64m", 1)));
        assertThat(e.resource()).contains(HostResource.DISK);
        assertThat(e.getMessage()).startsWith("disk: 300.0 MiB free in the state directory's file system, under the headroom 512.0 MiB");
    }

    @Test
    void aSpecLargerThanTheWholeHostIsRejectedAtOnceNotQueued() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1));
        c.submit(spec("64m", 1)).join(); // the in-flight limit is reached: others would queue
        AdmissionException mem = failure(c.submit(spec("32g", 1)));
        assertThat(mem.reason()).isEqualTo(Reason.LARGER_THAN_HOST);
        assertThat(mem.resource()).contains(HostResource.MEMORY);
        assertThat(mem.getMessage()).isEqualTo("memory: the spec asks for 32.0 GiB, larger than the whole host (24.0 GiB); it can never be "
            + "admitted here: give SandboxSpec.memory(...) at most 24.0 GiB");
        AdmissionException cpu = failure(c.submit(spec("64m", 3)));
        assertThat(cpu.resource()).contains(HostResource.CPU);
        assertThat(cpu.getMessage()).contains("larger than the whole host (2.00 cores)");
        AdmissionException pids = failure(c.submit(spec("64m", 1).pids(40000)));
        assertThat(pids.getMessage()).contains("larger than the whole host (pid_max 32768)");
        AdmissionStats s = c.stats();
        assertThat(s.queueLength()).isZero();
        assertThat(s.rejectedByReason()).containsEntry(Reason.LARGER_THAN_HOST, 3L);
    }

    @Test
    void theQueueAdmitsByPriorityThenFirstComeFirstServed() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1));
        AdmissionController.Permit holder = c.submit(spec("64m", 1)).join();
        List<String> order = new ArrayList<>();
        List<AdmissionController.Permit> permits = new ArrayList<>();
        String[] names = {"low-1", "high-1", "mid-1", "low-2", "high-2"};
        int[] prio = {-5, 10, 0, -5, 10};
        for (int i = 0; i < names.length; i++) {
            String name = names[i];
            c.submit(spec("64m", 1).priority(prio[i])).thenAccept(p -> {
                order.add(name);
                permits.add(p);
            });
        }
        holder.created(List.of());
        for (int i = 0; i < names.length; i++) {
            permits.get(i).created(List.of()); // each creation that finishes lets the next one in
        }
        assertThat(order).containsExactly("high-1", "high-2", "mid-1", "low-1", "low-2");
    }

    @Test
    void theQueueIsFairAcrossTags() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1));
        AdmissionController.Permit holder = c.submit(spec("64m", 0.1)).join();
        List<String> order = new ArrayList<>();
        List<AdmissionController.Permit> permits = new ArrayList<>();
        for (String tag : List.of("a", "b", "c")) { // each submitter sends 10 at once, one after the other
            for (int i = 0; i < 10; i++) {
                c.submit(spec("64m", 0.1).tag(tag)).thenAccept(p -> {
                    order.add(tag);
                    permits.add(p);
                });
            }
        }
        assertThat(c.stats().queueLength()).isEqualTo(30);
        holder.created(List.of());
        for (int i = 0; i < 30; i++) {
            permits.get(i).created(List.of());
        }
        assertThat(String.join("", order)).isEqualTo("abc".repeat(10));
        // a tag arriving later joins the rotation at its end, a higher priority goes first
        holder = c.submit(spec("64m", 0.1)).join();
        order.clear();
        permits.clear();
        for (String tag : List.of("a", "a", "a", "b", "c", "c", "d")) {
            c.submit(spec("64m", 0.1).tag(tag)).thenAccept(p -> {
                order.add(tag);
                permits.add(p);
            });
        }
        c.submit(spec("64m", 0.1).tag("z").priority(1)).thenAccept(p -> {
            order.add("z");
            permits.add(p);
        });
        holder.created(List.of());
        for (int i = 0; i < 8; i++) {
            permits.get(i).created(List.of());
        }
        assertThat(String.join("", order)).isEqualTo("zabcdaca");
    }

    @Test
    void aFullQueueRejectsAtOnceNamingItsLimit() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1).withQueueLimit(2));
        c.submit(spec("64m", 1)).join();
        var w1 = c.submit(spec("64m", 1));
        var w2 = c.submit(spec("64m", 1));
        AdmissionException e = failure(c.submit(spec("64m", 1)));
        assertThat(e.reason()).isEqualTo(Reason.QUEUE_FULL);
        assertThat(e.resource()).isEmpty();
        assertThat(e.getMessage()).startsWith("the admission queue is full: 2 creations wait, the most "
            + "Sandboxes.builder().admissionQueueLimit(...) allows (2); what holds the queue: creations in flight: 1 already");
        assertThat(w1).isNotDone();
        assertThat(w2).isNotDone();
    }

    @Test
    void theInFlightLimitHoldsCreationsUntilOneIsCreated() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(2));
        var a = c.submit(spec("64m", 0.5));
        var b = c.submit(spec("64m", 0.5));
        var third = c.submit(spec("64m", 0.5));
        assertThat(c.stats().inFlight()).isEqualTo(2);
        assertThat(third).isNotDone();
        a.join().created(List.of(Path.of("/cg/a")));
        assertThat(third).isCompleted(); // a still holds its allocation but no longer a creation slot
        AdmissionStats s = c.stats();
        assertThat(s.inFlight()).isEqualTo(2);
        assertThat(s.holding()).isEqualTo(3);
        b.join().release();
        assertThat(c.stats().inFlight()).isEqualTo(1);
    }

    @Test
    void aWaitTimesOutSayingHowLongAndWhatWasShort() {
        AdmissionController c = controller(p -> p.withOvercommit(HostResource.MEMORY, 1).withTimeout(Duration.ofSeconds(10)));
        c.submit(spec("20g", 1)).join();
        var waiting = c.submit(spec("8g", 1));
        clock.advance(Duration.ofSeconds(9));
        c.tick();
        assertThat(waiting).isNotDone();
        clock.advance(Duration.ofSeconds(2));
        c.tick();
        AdmissionException e = failure(waiting);
        assertThat(e.reason()).isEqualTo(Reason.TIMEOUT);
        assertThat(e.resource()).contains(HostResource.MEMORY);
        assertThat(e.waited()).isEqualTo(Duration.ofSeconds(11));
        assertThat(e.getMessage()).startsWith("waited 11.0 s in the admission queue without being admitted, over "
            + "Sandboxes.builder().admissionTimeout(...) (10.0 s); what held the queue: memory: admitting 8.0 GiB more allocation");
        assertThat(c.stats().queueLength()).isZero();
    }

    @Test
    void statsAddUp() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1).withQueueLimit(3).withTimeout(Duration.ofSeconds(30)));
        AdmissionController.Permit first = c.submit(spec("64m", 0.1)).join();
        List<CompletableFuture<AdmissionController.Permit>> waiting = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiting.add(c.submit(spec("64m", 0.1)));
        }
        failure(c.submit(spec("64m", 0.1))); // queue full
        failure(c.submit(spec("64g", 0.1))); // larger than the host
        clock.advance(Duration.ofSeconds(4));
        first.created(List.of()); // admits one after 4 s
        clock.advance(Duration.ofSeconds(40));
        c.tick(); // the other two time out
        AdmissionStats s = c.stats();
        assertThat(s.admitted()).isEqualTo(2);
        assertThat(s.queued()).isEqualTo(3);
        assertThat(s.rejected()).isEqualTo(4);
        assertThat(s.rejectedByReason()).containsEntry(Reason.QUEUE_FULL, 1L).containsEntry(Reason.LARGER_THAN_HOST, 1L)
            .containsEntry(Reason.TIMEOUT, 2L);
        assertThat(s.rejectedByReason().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(s.rejected());
        assertThat(s.rejectedByResource()).containsEntry(HostResource.MEMORY, 1L);
        assertThat(s.admitted() + s.rejected() + s.queueLength()).isEqualTo(6);
        assertThat(s.waitCount()).isEqualTo(2);
        assertThat(s.waitTotal()).isEqualTo(Duration.ofSeconds(4));
        assertThat(s.waitP50()).isEqualTo(Duration.ZERO);
        assertThat(s.waitP99()).isEqualTo(Duration.ofSeconds(4));
        assertThat(s.waitMax()).isEqualTo(Duration.ofSeconds(4));
        assertThat(s.waitMean()).isEqualTo(Duration.ofSeconds(2));
        assertThat(s.inFlight()).isEqualTo(1);
        assertThat(s.holding()).isEqualTo(2);
        assertThat(s.capacity()).containsEntry(HostResource.MEMORY, 24.0 * GIB).containsEntry(HostResource.CPU, 2.0);
        assertThat(s.allocated()).containsEntry(HostResource.MEMORY, 128.0 * MIB);
        assertThat(s.used()).containsEntry(HostResource.MEMORY, 2.0 * GIB);
    }

    @Test
    void aThousandWaitingRequestsHoldNoThreadAndCloseRejectsThemAll() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1));
        c.submit(spec("64m", 0.1)).join();
        int threads = Thread.activeCount();
        List<CompletableFuture<AdmissionController.Permit>> waiting = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            waiting.add(c.submit(spec("64m", 0.1).tag("t" + (i % 7)).priority(i % 3)));
        }
        assertThat(c.stats().queueLength()).isEqualTo(1000);
        assertThat(Thread.activeCount()).isLessThanOrEqualTo(threads);
        c.close();
        for (var f : waiting) {
            assertThat(f).isCompletedExceptionally();
            assertThatThrownBy(f::join).hasCauseInstanceOf(SandboxClosedException.class);
        }
        assertThat(c.stats().queueLength()).isZero();
        assertThat(failure0(c.submit(spec("64m", 0.1)))).isInstanceOf(SandboxClosedException.class);
    }

    private static Throwable failure0(CompletableFuture<?> f) {
        return f.handle((v, e) -> e).join();
    }

    @Test
    void aWithdrawnRequestLeavesTheQueueAndTheNextMovesUp() {
        AdmissionController c = controller(p -> p.withMaxCreationsInFlight(1));
        AdmissionController.Permit holder = c.submit(spec("64m", 0.1)).join();
        var gone = c.submit(spec("64m", 0.1).priority(5));
        var next = c.submit(spec("64m", 0.1));
        assertThat(c.withdraw(gone)).isTrue();
        assertThatThrownBy(gone::join).isInstanceOf(CancellationException.class);
        holder.release();
        assertThat(next).isCompleted();
        assertThat(c.withdraw(next)).isFalse();
        AdmissionStats s = c.stats();
        assertThat(s.queueLength()).isZero();
        assertThat(s.holding()).isEqualTo(1);
    }

    @Test
    void releasingTwiceFreesOnce() {
        AdmissionController c = controller(p -> p.withOvercommit(HostResource.MEMORY, 1));
        AdmissionController.Permit a = c.submit(spec("10g", 1)).join();
        c.submit(spec("10g", 1)).join();
        a.release();
        a.release();
        a.created(List.of());
        assertThat(c.stats().allocated()).containsEntry(HostResource.MEMORY, 10.0 * GIB);
        assertThat(c.stats().inFlight()).isEqualTo(1);
    }
}
