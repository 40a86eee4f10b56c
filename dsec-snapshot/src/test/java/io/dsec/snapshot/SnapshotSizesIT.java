package io.dsec.snapshot;

import static io.dsec.snapshot.SnapshotTestSupport.sh;
import static org.assertj.core.api.Assertions.assertThat;

import io.dsec.Exec;
import io.dsec.Image;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.Snapshot;
import io.dsec.SnapshotTimings;
import io.dsec.testing.Capabilities;
import io.dsec.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Snapshots of a few MiB and of ~100 MiB of changes, also while the sandbox keeps writing: the branch sees a consistent
 * state, and the pause and total times are logged (not asserted: this is a test, not a benchmark).
 */
class SnapshotSizesIT {
    private Path dir;
    private SandboxHost host;
    private Image image;

    @BeforeEach
    void setUp() throws Exception {
        Capabilities.requireRoot();
        Capabilities.requireTool("mkfs.erofs", "erofs-utils");
        dir = Files.createTempDirectory(Path.of("/tmp"), "dsec-it-");
        host = Sandboxes.builder().stateDir(dir.resolve("state")).build();
        image = SnapshotTestSupport.buildImage(host, dir);
    }

    @AfterEach
    void tearDown() {
        try {
            if (host != null) {
                host.close();
            }
        } finally {
            if (dir != null) {
                TestHost.lastResortCleanup(dir);
            }
        }
    }

    @Test
    void fewAndManyMebibytesWhileTheSandboxWrites() {
        try (Sandbox source = host.create(SandboxSpec.of(image).memory("512m"))) {
            sh(source, "mkdir -p /w/small && for i in $(seq 1 64); do dd if=/dev/urandom of=/w/small/$i bs=64k count=1 2>/dev/null; done");
            Snapshot small = source.snapshot();
            report("4 MiB in 64 files", small.timings().orElseThrow());

            sh(source, "mkdir -p /w/big && for i in $(seq 1 100); do dd if=/dev/urandom of=/w/big/$i bs=1M count=1 2>/dev/null; done");
            Snapshot big = source.snapshot();
            report("104 MiB in 164 files", big.timings().orElseThrow());
            assertThat(big.timings().orElseThrow().bytes()).isGreaterThanOrEqualTo(104L << 20);

            // A writer that replaces a counter file and appends to a log all the time: the branch sees one instant of it.
            var writer = source.execAsync(Exec.of("/bin/sh", "-c",
                "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); echo $i > /w/c.tmp && mv /w/c.tmp /w/counter && echo $i >> /w/log; done"));
            sh(source, "while [ ! -e /w/counter ]; do sleep 0.01; done");
            Snapshot busy = source.snapshot();
            report("104 MiB while writing", busy.timings().orElseThrow());
            List<Sandbox> branches = busy.branch(1);
            try {
                String counter = sh(branches.get(0), "cat /w/counter").strip();
                String lastLogged = sh(branches.get(0), "tail -n 1 /w/log").strip();
                int c = Integer.parseInt(counter);
                int l = Integer.parseInt(lastLogged);
                // The log line of a counter value is written after it: at one instant the log ends at c - 1 or c.
                assertThat(l).isBetween(c - 1, c);
                assertThat(sh(branches.get(0), "md5sum /w/big/50 | cut -d' ' -f1")).isEqualTo(sh(source, "md5sum /w/big/50 | cut -d' ' -f1"));
            } finally {
                branches.forEach(Sandbox::close);
                source.exec("/bin/sh", "-c", "kill $(pidof sh) 2>/dev/null; true");
                writer.cancel(true);
            }
        }
    }

    private static void report(String what, SnapshotTimings t) {
        System.out.printf("snapshot of %s: paused %.1f ms, total %.1f ms, %d bytes, %d entries, diff %d bytes%n", what,
            t.pause().toNanos() / 1e6, t.total().toNanos() / 1e6, t.bytes(), t.entries(), t.diffBytes());
        assertThat(t.pause()).isLessThanOrEqualTo(t.total());
    }
}
