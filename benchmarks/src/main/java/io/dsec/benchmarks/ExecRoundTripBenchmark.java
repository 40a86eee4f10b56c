package io.dsec.benchmarks;

import io.dsec.ExecResult;
import io.dsec.Sandbox;
import io.dsec.SandboxSpec;
import io.dsec.internal.host.ContainerSandboxHost;
import io.dsec.internal.oci.OciRuntimeCli;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.util.Statistics;

/**
 * Round trip of {@code true} through the agent, side by side with the OCI runtime's own {@code exec} of
 * {@code true} in the same sandbox (how a command reaches a container without an agent). Writes exec_roundtrip.json.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ExecRoundTripBenchmark {
    private BenchHost bench;
    private Sandbox sandbox;
    private ProcessBuilder runtimeExec;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        bench = new BenchHost();
        sandbox = bench.host.create(SandboxSpec.of(bench.image).memory("64m"));
        OciRuntimeCli runtime = ((ContainerSandboxHost) bench.host).runtime();
        runtimeExec = new ProcessBuilder(runtime.binary().toString(), "--root", runtime.stateRoot().toString(), "exec", sandbox.id(), "true")
            .redirectErrorStream(true);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        try {
            sandbox.close();
        } finally {
            bench.close();
        }
    }

    @Benchmark
    public int agentExecTrue() {
        ExecResult r = sandbox.exec("true");
        if (r.exitCode() != 0) {
            throw new IllegalStateException(r.toString());
        }
        return r.exitCode();
    }

    @Benchmark
    public int runtimeExecTrue() throws Exception {
        Process p = runtimeExec.start();
        p.getInputStream().readAllBytes();
        int exit = p.waitFor();
        if (exit != 0) {
            throw new IllegalStateException("runtime exec exited " + exit);
        }
        return exit;
    }

    static void run(Path results, boolean quick) throws Exception {
        Options options = new OptionsBuilder()
            .include(ExecRoundTripBenchmark.class.getName() + ".*")
            .forks(1)
            .warmupIterations(quick ? 1 : 3).warmupTime(org.openjdk.jmh.runner.options.TimeValue.seconds(quick ? 2 : 5))
            .measurementIterations(quick ? 2 : 5).measurementTime(org.openjdk.jmh.runner.options.TimeValue.seconds(quick ? 3 : 10))
            .threads(1)
            .build();
        double agentP50 = 0;
        double agentP99 = 0;
        double runtimeP50 = 0;
        double runtimeP99 = 0;
        String runtimeName = "runtime";
        for (RunResult r : new Runner(options).run()) {
            Statistics s = r.getPrimaryResult().getStatistics();
            String label = r.getParams().getBenchmark();
            if (label.endsWith("agentExecTrue")) {
                agentP50 = s.getPercentile(50);
                agentP99 = s.getPercentile(99);
            } else {
                runtimeP50 = s.getPercentile(50);
                runtimeP99 = s.getPercentile(99);
            }
        }
        new ResultFile("exec_roundtrip", "OCI runtime exec of true in the same sandbox (" + runtimeName + " --root <dsec> exec), same JMH run")
            .put("exec_p50_us", agentP50).put("exec_p99_us", agentP99)
            .put("runtime_exec_p50_us", runtimeP50).put("runtime_exec_p99_us", runtimeP99)
            .put("speedup_p50_ratio", runtimeP50 / agentP50).put("speedup_p99_ratio", runtimeP99 / agentP99)
            .write(results);
    }
}
