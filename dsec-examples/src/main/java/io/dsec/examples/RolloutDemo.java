package io.dsec.examples;

import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.Image;
import io.dsec.Layer;
import io.dsec.LayerKind;
import io.dsec.Sandbox;
import io.dsec.SandboxHost;
import io.dsec.SandboxSpec;
import io.dsec.Sandboxes;
import io.dsec.WriteOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * A small rollout on the embedded default host: a real Debian base (python3, pytest), a workspace with a
 * failing test, a toolkit with the grader; 16 sandboxes in parallel each read the code, write a candidate
 * fix, run the tests through the read-only grader, and report. Exits non-zero if anything failed: a sandbox
 * that could not be made or driven, or a grade that disagrees with what the candidate deserves.
 */
public final class RolloutDemo {
    private static final int SANDBOXES = 16;

    /** Candidate fixes an agent might write; the expected grade says whether the fix is right. */
    private static final List<Candidate> CANDIDATES = List.of(
        new Candidate("return a + b", true),
        new Candidate("return a - b", false),
        new Candidate("return b + a", true),
        new Candidate("return a * b", false));

    private record Candidate(String body, boolean correct) {
    }

    private record Row(int index, String sandbox, long createMs, long readMs, long writeMs, long testMs, String grade, boolean expectedPass,
                       String error) {
        boolean ok() {
            return error == null && grade.equals(expectedPass ? "PASS" : "FAIL");
        }
    }

    private RolloutDemo() {
    }

    public static void main(String[] args) throws Exception {
        Path cache = Path.of(System.getenv().getOrDefault("DSEC_DEMO_CACHE", "/var/cache/dsec"));
        String mirror = System.getenv().getOrDefault("DSEC_DEBIAN_MIRROR", "http://deb.debian.org/debian");
        long t0 = System.nanoTime();
        try (SandboxHost host = Sandboxes.builder().build()) {
            System.out.println("dsec host: " + host.stateDir() + " on " + host.backendDescription());
            Layer base = host.layers().find(LayerKind.BASE, "debian-12-python:bookworm").orElse(null);
            if (base == null) {
                Path rootfs = DebianRootfs.ensure(cache.resolve("rootfs"), "bookworm", List.of("python3", "python3-pytest"), mirror);
                base = host.layers().fromDirectory(LayerKind.BASE, "debian-12-python:bookworm", rootfs);
            }
            Path scratch = Files.createTempDirectory("dsec-demo-");
            Layer workspace;
            Layer toolkit;
            try {
                workspace = host.layers().fromDirectory(LayerKind.WORKSPACE, "calc-task:1", writeWorkspace(scratch.resolve("workspace")));
                toolkit = host.layers().fromDirectory(LayerKind.TOOLKIT, "demo-harness:1", writeToolkit(scratch.resolve("toolkit")));
            } finally {
                deleteTree(scratch);
            }
            System.out.printf("layers: base %s %s (%d MiB), workspace %s %s, toolkit %s %s; ready in %d ms%n",
                base.reference(), base.digest().substring(0, 19), base.sizeBytes() >> 20, workspace.reference(), workspace.digest().substring(0, 19),
                toolkit.reference(), toolkit.digest().substring(0, 19), (System.nanoTime() - t0) / 1_000_000);
            Image image = Image.of(base, workspace, toolkit);

            long rollout = System.nanoTime();
            List<CompletableFuture<Row>> runs = new ArrayList<>();
            for (int i = 0; i < SANDBOXES; i++) {
                int index = i;
                long requested = System.nanoTime();
                runs.add(host.createAsync(SandboxSpec.of(image).memory("512m").cpus(1).label("episode", String.valueOf(i)))
                    .handle((sb, error) -> error != null
                        ? new Row(index, "-", ms(requested), 0, 0, 0, "ERROR", CANDIDATES.get(index % CANDIDATES.size()).correct(), rootMessage(error))
                        : episode(sb, index, ms(requested))));
            }
            List<Row> rows = new ArrayList<>();
            for (CompletableFuture<Row> run : runs) {
                rows.add(run.join());
            }
            long rolloutMs = ms(rollout);
            print(rows, rolloutMs);
            boolean allOk = rows.stream().allMatch(Row::ok);
            System.out.println(allOk ? "demo OK: every sandbox ran and every grade matched its candidate"
                : "demo FAILED: see the rows marked !");
            if (!allOk) {
                System.exit(1);
            }
        }
    }

    private static Row episode(Sandbox sb, int index, long createMs) {
        Candidate candidate = CANDIDATES.get(index % CANDIDATES.size());
        try (sb) {
            long t = System.nanoTime();
            String code = sb.files().readString("/repo/calc.py");
            long readMs = ms(t);
            t = System.nanoTime();
            String fixed = code.replace("return a - b  # BUG", candidate.body());
            sb.files().write("/repo/calc.py", fixed.getBytes(StandardCharsets.UTF_8), WriteOptions.mode(0644));
            long writeMs = ms(t);
            t = System.nanoTime();
            ExecResult r = sb.exec(Exec.of("/opt/dsec/bin/grade").timeout(Duration.ofMinutes(2)));
            long testMs = ms(t);
            String grade = r.stdoutText().lines().filter(l -> l.startsWith("GRADE ")).map(l -> l.substring(6).trim()).findFirst()
                .orElse("ERROR");
            String error = grade.equals("ERROR") ? "grader printed no grade (exit " + r.exitCode() + "): " + r.stderrText().strip() : null;
            return new Row(index, sb.id(), createMs, readMs, writeMs, testMs, grade, candidate.correct(), error);
        } catch (RuntimeException e) {
            return new Row(index, sb.id(), createMs, 0, 0, 0, "ERROR", candidate.correct(), rootMessage(e));
        }
    }

    private static void print(List<Row> rows, long rolloutMs) {
        System.out.printf("%n%-3s %-16s %9s %7s %8s %8s %-6s %-8s%n", "#", "sandbox", "create_ms", "read_ms", "write_ms", "test_ms", "grade", "expected");
        for (Row r : rows) {
            System.out.printf("%-3d %-16s %9d %7d %8d %8d %-6s %-8s%s%n", r.index(), r.sandbox(), r.createMs(), r.readMs(), r.writeMs(), r.testMs(),
                r.grade(), r.expectedPass() ? "PASS" : "FAIL", r.ok() ? "" : "  ! " + (r.error() == null ? "grade mismatch" : r.error()));
        }
        System.out.printf("%n%d sandboxes in %d ms; create p50 %d ms, max %d ms; test p50 %d ms, max %d ms%n", rows.size(), rolloutMs,
            percentile(rows.stream().map(Row::createMs).toList(), 50), percentile(rows.stream().map(Row::createMs).toList(), 100),
            percentile(rows.stream().map(Row::testMs).toList(), 50), percentile(rows.stream().map(Row::testMs).toList(), 100));
    }

    private static long percentile(List<Long> values, int p) {
        List<Long> sorted = values.stream().sorted().toList();
        int idx = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, idx)));
    }

    private static Path writeWorkspace(Path root) throws Exception {
        Path repo = Files.createDirectories(root.resolve("repo"));
        Files.writeString(repo.resolve("calc.py"), "def add(a, b):\n    return a - b  # BUG\n");
        Files.writeString(repo.resolve("test_calc.py"), "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
            + "def test_add_negative():\n    assert add(-2, -3) == -5\n");
        return root;
    }

    private static Path writeToolkit(Path root) throws Exception {
        Path bin = Files.createDirectories(root.resolve("bin"));
        Path grade = bin.resolve("grade");
        // The grader lives on the read-only toolkit: the agent can change the workspace, never the grading.
        Files.writeString(grade, "#!/bin/sh\ncd /repo || exit 2\nif python3 -m pytest -q -p no:cacheprovider >/tmp/pytest.log 2>&1; then\n"
            + "  echo 'GRADE PASS'\nelse\n  echo 'GRADE FAIL'\n  tail -n 5 /tmp/pytest.log\nfi\n");
        grade.toFile().setExecutable(true, false);
        return root;
    }

    private static long ms(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && (t instanceof java.util.concurrent.CompletionException || t.getMessage() == null)) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    private static void deleteTree(Path dir) throws Exception {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
