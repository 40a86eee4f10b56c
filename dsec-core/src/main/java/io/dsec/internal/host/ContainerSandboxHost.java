package io.dsec.internal.host;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.dsec.AdmissionStats;
import io.dsec.DsecException;
import io.dsec.Layer;
import io.dsec.Layers;
import io.dsec.Sandbox;
import io.dsec.SandboxClosedException;
import io.dsec.SandboxHost;
import io.dsec.SandboxLaunchException;
import io.dsec.SandboxSpec;
import io.dsec.Snapshot;
import io.dsec.SnapshotException;
import io.dsec.SnapshotMode;
import io.dsec.Snapshots;
import io.dsec.InvalidSpecException;
import io.dsec.spi.SnapshotEngine;
import io.dsec.MemoryStats;
import io.dsec.internal.admission.AdmissionController;
import io.dsec.internal.admission.KernelUsageSource;
import io.dsec.internal.admission.Ticker;
import io.dsec.internal.agent.AgentConnection;
import io.dsec.internal.fs.FileTrees;
import io.dsec.internal.agent.AgentIo;
import io.dsec.internal.layer.ErofsImageBuilder;
import io.dsec.internal.memory.HostMemory;
import io.dsec.internal.layer.LayerMounts;
import io.dsec.internal.layer.LayersImpl;
import io.dsec.internal.layer.MountedLayer;
import io.dsec.internal.nativeio.ErrnoException;
import io.dsec.internal.nativeio.Posix;
import io.dsec.internal.oci.CgroupLayout;
import io.dsec.internal.oci.ContainerPlan;
import io.dsec.internal.oci.OciConfigFactory;
import io.dsec.internal.oci.OciRuntimeCli;
import io.dsec.internal.oci.RuntimeSelector;
import io.dsec.spi.LayerStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A host of container sandboxes: layers mounted once and shared, one overlay root per sandbox, an OCI runtime
 * to start each one detached from the JVM, and one agent connection per sandbox multiplexed on a shared IO thread.
 */
public final class ContainerSandboxHost implements SandboxHost {
    private static final Logger LOG = LoggerFactory.getLogger(ContainerSandboxHost.class);
    private static final char[] ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();

    private final HostConfig config;
    private final Path sandboxesDir;
    private final Path agentBinary;
    private final ObjectMapper mapper = new ObjectMapper();
    private final CgroupLayout cgroups;
    private final OciRuntimeCli runtime;
    private final OciConfigFactory ociConfigs;
    private final LayerStore store;
    private final Layers layers;
    private final ErofsImageBuilder erofs = new ErofsImageBuilder();
    private final Object engineLock = new Object();
    private volatile SnapshotEngine.Bound snapshotEngine;
    private final LayerMounts mounts;
    private final AgentIo agentIo;
    private final ExecutorService executor;
    private final ConcurrentHashMap<String, ContainerSandbox> sandboxes = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final SecureRandom random = new SecureRandom();
    private final Closer lifetime;
    private final AdmissionController admission;
    private final HostMemory memory = new HostMemory();

    private ContainerSandboxHost(HostConfig config, Closer undo) {
        this.config = config;
        this.lifetime = undo;
        HostPrerequisites.check();
        Path state = config.stateDir();
        try {
            Files.createDirectories(state);
            this.sandboxesDir = Files.createDirectories(state.resolve("sandboxes"));
        } catch (IOException e) {
            throw new DsecException("cannot create the state directory " + state + ": " + e.getMessage()
                + " (choose a writable local directory with Sandboxes.builder().stateDir(...))", e);
        }
        StateDirLock lock = StateDirLock.acquire(state);
        undo.add(lock::close);
        this.admission = new AdmissionController(config.admission(), new KernelUsageSource(state), Clock.systemUTC(),
            Ticker.daemon("dsec-admission"));
        undo.add(admission::close);
        this.agentBinary = AgentBinary.install(state.resolve("agent"));
        this.cgroups = CgroupLayout.ofHost();
        this.runtime = RuntimeSelector.select(config.runtime(), cgroups, state.resolve("runtime"), mapper);
        this.ociConfigs = new OciConfigFactory(Posix.hardLimit(Posix.RLIMIT_NOFILE), Posix.hardLimit(Posix.RLIMIT_NPROC));
        this.store = config.layerStore().open(state);
        undo.add(store::close);
        this.layers = new LayersImpl(store, erofs);
        this.mounts = new LayerMounts(store, state);
        undo.add(mounts::close);
        if (config.executor() != null) {
            this.executor = config.executor();
        } else {
            this.executor = newExecutor();
            undo.add(executor::shutdownNow);
        }
        this.agentIo = new AgentIo();
        undo.add(agentIo::close);
    }

    public static ContainerSandboxHost open(HostConfig config) {
        Closer undo = new Closer();
        try {
            return new ContainerSandboxHost(config, undo);
        } catch (RuntimeException e) {
            undo.rollback(e);
            throw e;
        }
    }

    private static ExecutorService newExecutor() {
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(64, 64, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "dsec-host-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    @Override
    public Layers layers() {
        ensureOpen();
        return layers;
    }

    @Override
    public Sandbox create(SandboxSpec spec) {
        ensureOpen();
        return createAdmitted(spec, admission.acquire(spec));
    }

    /** Creates a sandbox admission let through; the permit is released when it is torn down (or creation fails). */
    private Sandbox createAdmitted(SandboxSpec spec, AdmissionController.Permit permit) {
        if (closed.get()) {
            permit.release();
            ensureOpen();
        }
        String id = newId();
        Path dir = sandboxesDir.resolve(id);
        Closer rollback = new Closer();
        rollback.add(permit::release);
        try {
            Files.createDirectory(dir);
            rollback.add(() -> FileTrees.deleteTree(dir));
            List<Path> lowers = new ArrayList<>();
            for (Layer layer : spec.image().rootLayersTopDown()) {
                MountedLayer mounted = mounts.acquire(layer);
                rollback.add(mounted::close);
                lowers.add(mounted.path());
            }
            Path toolkit = null;
            if (spec.image().toolkit() != null) {
                MountedLayer mounted = mounts.acquire(spec.image().toolkit());
                rollback.add(mounted::close);
                toolkit = mounted.path();
            }
            Path rootfs = Files.createDirectory(dir.resolve("rootfs"));
            Path upper = Files.createDirectory(dir.resolve("upper"));
            Path work = Files.createDirectory(dir.resolve("work"));
            StringBuilder lowerdir = new StringBuilder();
            for (Path lower : lowers) {
                lowerdir.append(lowerdir.length() == 0 ? "" : ":").append(lower);
            }
            Posix.mount("overlay", rootfs, "overlay", 0, "lowerdir=" + lowerdir + ",upperdir=" + upper + ",workdir=" + work);
            rollback.add(() -> unmount(rootfs));

            Path bundle = Files.createDirectory(dir.resolve("bundle"));
            ContainerPlan plan = new ContainerPlan(id, rootfs, spec.hostname(), agentBinary, toolkit, config.toolkitPath(),
                spec.memoryBytes(), spec.cpus(), spec.pidsLimit(), "/dsec/" + id, CpuWeights.shares(spec.cpuClass()));
            Files.write(bundle.resolve("config.json"), ociConfigs.configJson(plan, mapper));
            Path socket = dir.resolve("agent.sock");
            Path log = dir.resolve("runtime.log");
            rollback.add(() -> runtime.deleteForce(id));
            runtime.runDetached(agentBinary, socket, bundle, id, log);
            AgentConnection connection = AgentConnection.connect(agentIo, socket, config.agentStartTimeout());
            rollback.add(connection::close);
            List<Path> cgroupDirs = cgroups.cgroupDirs(plan.cgroupsPath());
            ContainerSandbox sandbox = new ContainerSandbox(id, spec, dir, connection, rollback, this::forget, log,
                cgroupDirs, this::takeSnapshot);
            sandboxes.put(id, sandbox);
            permit.created(cgroupDirs);
            if (closed.get()) {
                sandbox.close();
                throw new SandboxClosedException("the host was closed while sandbox " + id + " was being created");
            }
            return sandbox;
        } catch (IOException e) {
            SandboxLaunchException failure = new SandboxLaunchException("creating sandbox " + id + " failed: " + e.getMessage(), e);
            rollback.rollback(failure);
            throw failure;
        } catch (DsecException e) {
            rollback.rollback(e);
            if (e instanceof SandboxLaunchException || e instanceof SandboxClosedException || e instanceof io.dsec.MissingPrerequisiteException) {
                throw e;
            }
            SandboxLaunchException failure = new SandboxLaunchException("creating sandbox " + id + " failed: " + e.getMessage(), e);
            throw failure;
        } catch (RuntimeException | Error e) {
            rollback.rollback(e);
            throw e;
        }
    }

    @Override
    public CompletableFuture<Sandbox> createAsync(SandboxSpec spec) {
        ensureOpen();
        // Waiting for admission holds no thread: the queue completes `admitted`, and only then is creation handed to the executor.
        CompletableFuture<AdmissionController.Permit> admitted = admission.submit(spec);
        CompletableFuture<Sandbox> result = new CompletableFuture<>();
        admitted.whenComplete((permit, refused) -> {
            if (refused != null) {
                result.completeExceptionally(refused);
                return;
            }
            try {
                executor.execute(() -> {
                    try {
                        Sandbox sandbox = createAdmitted(spec, permit);
                        if (!result.complete(sandbox)) {
                            sandbox.close(); // the caller cancelled while it was being created
                        }
                    } catch (Throwable t) {
                        result.completeExceptionally(t);
                    }
                });
            } catch (RejectedExecutionException e) {
                permit.release();
                result.completeExceptionally(new SandboxClosedException("the host's executor refused the creation (is it shut down?): "
                    + e.getMessage()));
            }
        });
        result.whenComplete((sandbox, failure) -> {
            if (result.isCancelled()) {
                admission.withdraw(admitted);
            }
        });
        return result;
    }

    @Override
    public AdmissionStats admission() {
        return admission.stats();
    }

    @Override
    public List<Sandbox> branch(Snapshot snapshot, int n) {
        ensureOpen();
        if (n <= 0) {
            throw new InvalidSpecException("n", n, "give the number of branches to create, 1 or more");
        }
        if (snapshot == null) {
            throw new InvalidSpecException("snapshot", null, "give a Snapshot from sandbox.snapshot() or host.snapshots().get(id)");
        }
        return engine().branch(snapshot, n);
    }

    @Override
    public Snapshots snapshots() {
        ensureOpen();
        return engine().snapshots();
    }

    private Snapshot takeSnapshot(ContainerSandbox sandbox, SnapshotMode mode, Map<String, String> labels) {
        ensureOpen();
        return engine().snapshot(sandbox, mode, labels);
    }

    /** The snapshot engine found on the classpath, bound to this host on first use. */
    private SnapshotEngine.Bound engine() {
        SnapshotEngine.Bound bound = snapshotEngine;
        if (bound != null) {
            return bound;
        }
        synchronized (engineLock) {
            if (snapshotEngine == null) {
                SnapshotEngine engine = ServiceLoader.load(SnapshotEngine.class, ContainerSandboxHost.class.getClassLoader())
                    .findFirst().orElseThrow(() -> new SnapshotException("no snapshot engine on the classpath: snapshots and "
                        + "branches need the dsec-snapshot module; add io.dsec:dsec-snapshot to the classpath"));
                SnapshotEngine.Bound opened = engine.open(new EngineHost());
                lifetime.add(opened::close);
                snapshotEngine = opened;
            }
            return snapshotEngine;
        }
    }

    /** What the snapshot engine sees of this host. */
    private final class EngineHost implements SnapshotEngine.Host {
        @Override
        public LayerStore store() {
            return store;
        }

        @Override
        public Path stateDir() {
            return config.stateDir();
        }

        @Override
        public LayerStore.BuiltImage buildDiffImage(Path directory, boolean keepHoles) {
            return keepHoles ? erofs.diffFromDirectory(directory, store.stagingDirectory())
                : erofs.fromDirectory(directory, store.stagingDirectory());
        }

        @Override
        public SnapshotEngine.MountedLayerHandle mount(Layer layer) {
            MountedLayer mounted = mounts.acquire(layer);
            return new SnapshotEngine.MountedLayerHandle() {
                @Override
                public Path path() {
                    return mounted.path();
                }

                @Override
                public void close() {
                    mounted.close();
                }
            };
        }

        @Override
        public Sandbox create(SandboxSpec spec) {
            return ContainerSandboxHost.this.create(spec);
        }

        @Override
        public Collection<Sandbox> sandboxes() {
            return ContainerSandboxHost.this.sandboxes();
        }

        @Override
        public String toolkitPath() {
            return config.toolkitPath();
        }

        @Override
        public int squashDepth() {
            return config.snapshotSquashDepth();
        }

        @Override
        public SandboxHost publicHost() {
            return ContainerSandboxHost.this;
        }
    }

    @Override
    public Collection<Sandbox> sandboxes() {
        return List.copyOf(sandboxes.values());
    }

    @Override
    public Optional<Sandbox> sandbox(String id) {
        return Optional.ofNullable(sandboxes.get(id));
    }

    @Override
    public Path stateDir() {
        return config.stateDir();
    }

    @Override
    public String backendDescription() {
        return runtime.version() + " (" + cgroups + ")";
    }

    /** The runtime driving this host's containers; for tests and the leak check. */
    public OciRuntimeCli runtime() {
        return runtime;
    }

    public CgroupLayout cgroups() {
        return cgroups;
    }

    @Override
    public MemoryStats memory() {
        return memory.stats();
    }

    @Override
    public long reclaimPageCache(Sandbox sandbox) {
        ensureOpen();
        if (sandboxes.get(sandbox.id()) != sandbox) {
            throw new IllegalArgumentException("sandbox " + sandbox.id() + " is not open on this host");
        }
        return memory.reclaimPageCache(cgroups.cgroupDirs("/dsec/" + sandbox.id()));
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        admission.close(); // rejects queued creations first, so sandboxes closing below admit none of them
        // Sandboxes first, then what they shared: the IO thread, layer mounts, executor, state lock (reverse of opening).
        lifetime.add(memory::close);
        lifetime.add(this::closeSandboxes);
        lifetime.close();
    }

    private void closeSandboxes() {
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (ContainerSandbox sandbox : List.copyOf(sandboxes.values())) {
            closing.add(CompletableFuture.runAsync(sandbox::close, executor));
        }
        RuntimeException first = null;
        for (CompletableFuture<Void> f : closing) {
            try {
                f.join();
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                if (first == null) {
                    first = new DsecException("closing sandboxes failed: " + cause.getMessage(), cause);
                } else {
                    first.addSuppressed(cause);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private void forget(String id) {
        sandboxes.remove(id);
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new SandboxClosedException("this SandboxHost is closed; build a new one with Sandboxes.builder()");
        }
    }

    private String newId() {
        char[] id = new char[12];
        for (int i = 0; i < id.length; i++) {
            id[i] = ID_ALPHABET[random.nextInt(ID_ALPHABET.length)];
        }
        return "sb-" + new String(id);
    }

    /** Unmounts a sandbox root; if something still holds it, detaches it so the kernel frees it when released. */
    static void unmount(Path target) {
        try {
            Posix.unmount(target, 0);
        } catch (ErrnoException e) {
            if (e.errno() == Posix.EBUSY) {
                LOG.warn("{} is busy; detaching it", target);
                Posix.unmount(target, Posix.MNT_DETACH);
            } else if (e.errno() != Posix.EINVAL && e.errno() != Posix.ENOENT) {
                throw e;
            }
        }
    }

    static UncheckedIOException unchecked(IOException e) {
        return new UncheckedIOException(e);
    }
}
