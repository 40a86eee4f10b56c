package io.dsec.internal.agent;

import static io.dsec.internal.agent.Protocol.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.dsec.AgentException;
import io.dsec.DsecException;
import io.dsec.Exec;
import io.dsec.ExecResult;
import io.dsec.FileStat;
import io.dsec.SandboxFileException;
import io.dsec.WriteOptions;

/**
 * One connection to a sandbox's agent, multiplexing any number of requests. Small while idle: no thread and no
 * buffer of its own; all IO runs on the shared {@link AgentIo}. Thread-safe.
 */
public final class AgentConnection implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AgentConnection.class);

    public static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    public static final String DEFAULT_HOME = "/root";

    /** What the agent said in its HELLO reply; a changed {@code instanceId} means the agent restarted. */
    public record Hello(int protocolVersion, int pid, long instanceId, Duration uptime, String version) {
    }

    private final AgentIo io;
    private final SocketChannel channel;
    private final String where;
    private final AtomicInteger nextId = new AtomicInteger();

    // Guarded by this.
    private final ArrayDeque<ByteBuffer> out = new ArrayDeque<>(2);
    private final HashMap<Integer, Call> calls = new HashMap<>(4);
    private boolean flushQueued;
    private boolean open = true;
    private AgentException closeCause;
    private List<Runnable> closeListeners;

    // IO thread only.
    private SelectionKey key;
    private final byte[] header = new byte[4];
    private int headerFill;
    private byte[] frame;
    private int frameFill;

    private volatile Hello hello;

    private AgentConnection(AgentIo io, SocketChannel channel, String where) {
        this.io = io;
        this.channel = channel;
        this.where = where;
    }

    /**
     * Connects to the agent listening at {@code socket}, retrying until it accepts or {@code timeout} passes, then
     * shakes hands.
     */
    public static AgentConnection connect(AgentIo io, Path socket, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String where = socket.toString();
        SocketChannel channel;
        long pause = 1;
        for (;;) {
            SocketChannel ch = null;
            try {
                ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                ch.connect(UnixDomainSocketAddress.of(socket));
                channel = ch;
                break;
            } catch (IOException e) {
                closeQuietly(ch);
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AgentException("the agent at " + where + " did not accept a connection within " + timeout
                        + " (" + e + "); check that the sandbox started and its agent is running", e);
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(pause)));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new AgentException("interrupted while connecting to the agent at " + where, ie);
                }
                pause = Math.min(pause * 2, 50);
            }
        }
        AgentConnection c = new AgentConnection(io, channel, where);
        try {
            channel.configureBlocking(false);
            io.register(c, channel);
            Encoder e = new Encoder(T_HELLO, c.newId(), 4).u32(VERSION);
            CompletableFuture<Hello> f = c.request(e, "HELLO", (type, p) -> {
                expect(type, R_HELLO);
                return new Hello(p.getInt(), p.getInt(), p.getLong(), Duration.ofMillis(p.getLong()), str(p));
            });
            long left = Math.max(1, deadline - System.nanoTime());
            Hello h;
            try {
                h = f.get(left, TimeUnit.NANOSECONDS);
            } catch (TimeoutException te) {
                throw new AgentException("the agent at " + where + " accepted a connection but did not answer HELLO within " + timeout);
            }
            if (h.protocolVersion() != VERSION) {
                throw new AgentException("the agent at " + where + " speaks protocol " + h.protocolVersion() + ", this host speaks "
                    + VERSION + "; use the agent binary shipped with this dsec version");
            }
            c.hello = h;
            return c;
        } catch (IOException | InterruptedException | ExecutionException | RuntimeException ex) {
            c.close();
            if (ex instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw toDsec(ex, "connecting to the agent at " + where);
        }
    }

    /** What the agent said when the connection opened. */
    public Hello hello() {
        return hello;
    }

    /** The agent's process id (in its own pid namespace). */
    public int agentPid() {
        return hello.pid();
    }

    public synchronized boolean isOpen() {
        return open;
    }

    /** Why the connection closed: null while open or when {@link #close()} closed it. */
    public synchronized AgentException closeCause() {
        return closeCause;
    }

    /**
     * Runs {@code listener} once when the connection closes, whether {@link #close()} closed it or the agent went
     * away ({@link #closeCause()} tells which); at once (on the executor) if it is closed already.
     */
    public void onClose(Runnable listener) {
        synchronized (this) {
            if (open) {
                if (closeListeners == null) {
                    closeListeners = new ArrayList<>(1);
                }
                closeListeners.add(listener);
                return;
            }
        }
        io.dispatch(listener);
    }

    /** Closes the connection, failing in-flight calls with {@link AgentException}. Execs keep running in the sandbox. Idempotent. */
    @Override
    public void close() {
        closeWith(null);
    }

    /** A round trip to the agent. Completes on the IO thread. */
    public CompletableFuture<Void> ping() {
        return request(new Encoder(T_PING, newId(), 0), "PING", (type, p) -> {
            expect(type, R_PONG);
            return null;
        });
    }

    // ---------------------------------------------------------------- exec

    /**
     * Runs {@code exec}: its env is {@code baseEnv} overlaid with {@code exec.env()} (PATH and HOME get defaults when
     * neither gives them); its workdir is {@code exec.workdir()} or {@code defaultWorkdir}. The future completes (on
     * the executor) after every line callback of the exec has run.
     */
    public CompletableFuture<ExecResult> exec(Exec exec, Map<String, String> baseEnv, String defaultWorkdir) {
        return start(exec, baseEnv, defaultWorkdir).result();
    }

    /** Like {@link #exec} but returns a handle that also gives the pid and can signal the process group. */
    public RunningExec start(Exec exec, Map<String, String> baseEnv, String defaultWorkdir) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", DEFAULT_PATH);
        env.put("HOME", DEFAULT_HOME);
        if (baseEnv != null) {
            env.putAll(baseEnv);
        }
        env.putAll(exec.env());
        String cwd = exec.workdir() != null ? exec.workdir() : defaultWorkdir != null ? defaultWorkdir : "/";
        long timeoutMs = 0;
        if (!exec.timeout().isZero()) {
            timeoutMs = Math.max(1, exec.timeout().toMillis());
        }
        int id = newId();
        Encoder e = new Encoder(T_EXEC, id, 256 + exec.stdin().length);
        e.u32(exec.argv().size());
        for (String a : exec.argv()) {
            e.str(a);
        }
        e.u32(env.size());
        env.forEach((k, v) -> e.str(k + "=" + v));
        e.str(cwd).u32(exec.uid()).u32(exec.gid()).u64(timeoutMs).u64(exec.maxOutputBytes());
        e.bytes(exec.stdin(), 0, exec.stdin().length);
        ExecCall call = new ExecCall(id, exec);
        ByteBuffer frame;
        try {
            frame = e.finish();
        } catch (AgentException ex) {
            call.fail(ex);
            return call.handle;
        }
        send(id, call, frame);
        return call.handle;
    }

    /** A started exec. */
    public final class RunningExec {
        private final int id;
        private final CompletableFuture<Integer> pid = new CompletableFuture<>();
        private final CompletableFuture<ExecResult> result = new CompletableFuture<>();

        private RunningExec(int id) {
            this.id = id;
        }

        /** The process id in the sandbox, once started (completes on the IO thread). */
        public CompletableFuture<Integer> pid() {
            return pid;
        }

        public CompletableFuture<ExecResult> result() {
            return result;
        }

        /** Sends {@code signal} to the exec's process group. */
        public CompletableFuture<Void> signal(int signal) {
            Encoder e = new Encoder(T_SIGNAL, newId(), 8).u32(id).u32(signal);
            return request(e, "SIGNAL", (type, p) -> {
                expect(type, R_OK);
                return null;
            });
        }
    }

    /** Accumulates one stream of an exec: the bytes kept and, with a callback, lines. */
    private final class OutputStreamState {
        private final Consumer<String> lines;
        private final SerialQueue queue;
        private ByteArrayOutputStream kept;
        private ByteArrayOutputStream partial;

        OutputStreamState(Consumer<String> lines, SerialQueue queue) {
            this.lines = lines;
            this.queue = queue;
        }

        void data(ByteBuffer p, boolean gapBefore) {
            int n = p.remaining();
            byte[] a = p.array();
            int off = p.arrayOffset() + p.position();
            if (kept == null) {
                kept = new ByteArrayOutputStream(Math.max(32, n));
            }
            kept.write(a, off, n);
            if (lines == null) {
                return;
            }
            List<String> batch = new ArrayList<>();
            if (gapBefore) {
                endLine(batch);
            }
            int start = off;
            for (int i = off; i < off + n; i++) {
                if (a[i] == '\n') {
                    if (partial != null && partial.size() > 0) {
                        partial.write(a, start, i - start);
                        batch.add(partial.toString(StandardCharsets.UTF_8));
                        partial.reset();
                    } else {
                        batch.add(new String(a, start, i - start, StandardCharsets.UTF_8));
                    }
                    start = i + 1;
                }
            }
            if (start < off + n) {
                if (partial == null) {
                    partial = new ByteArrayOutputStream(Math.max(32, off + n - start));
                }
                partial.write(a, start, off + n - start);
            }
            deliver(batch);
        }

        void end() {
            if (lines == null) {
                return;
            }
            List<String> batch = new ArrayList<>(1);
            endLine(batch);
            deliver(batch);
        }

        private void endLine(List<String> batch) {
            if (partial != null && partial.size() > 0) {
                batch.add(partial.toString(StandardCharsets.UTF_8));
                partial.reset();
            }
        }

        private void deliver(List<String> batch) {
            if (!batch.isEmpty()) {
                queue.submit(() -> batch.forEach(lines));
            }
        }

        byte[] bytes() {
            return kept == null ? new byte[0] : kept.toByteArray();
        }
    }

    private final class ExecCall extends Call {
        final RunningExec handle;
        final String program;
        final SerialQueue queue;
        final OutputStreamState stdout;
        final OutputStreamState stderr;

        ExecCall(int id, Exec exec) {
            this.handle = new RunningExec(id);
            this.program = exec.argv().get(0);
            boolean callbacks = exec.onStdout() != null || exec.onStderr() != null;
            this.queue = callbacks ? new SerialQueue(io) : null;
            this.stdout = new OutputStreamState(exec.onStdout(), queue);
            this.stderr = new OutputStreamState(exec.onStderr(), queue);
        }

        @Override
        boolean onFrame(int type, ByteBuffer p) {
            switch (type) {
                case R_EXEC_STARTED:
                    handle.pid.complete(p.getInt());
                    return false;
                case R_STDOUT:
                    stdout.data(p, false);
                    return false;
                case R_STDERR:
                    stderr.data(p, false);
                    return false;
                case R_STDOUT_TAIL:
                case R_STDERR_TAIL: {
                    long gap = p.getLong();
                    (type == R_STDOUT_TAIL ? stdout : stderr).data(p, gap > 0);
                    return false;
                }
                case R_EXIT: {
                    int code = p.getInt();
                    int signal = p.getInt();
                    boolean timedOut = p.get() != 0;
                    long droppedOut = p.getLong();
                    long droppedErr = p.getLong();
                    long micros = p.getLong();
                    stdout.end();
                    stderr.end();
                    ExecResult r = new ExecResult(code, signal, stdout.bytes(), stderr.bytes(), Duration.ofNanos(micros * 1000),
                        timedOut, droppedOut, droppedErr);
                    complete(() -> handle.result.complete(r));
                    return true;
                }
                case R_ERROR: {
                    int errno = p.getInt();
                    String msg = str(p);
                    fail(new AgentException("exec of " + program + " failed in the agent: " + msg + " (errno " + errno + ")"));
                    return true;
                }
                default:
                    throw new ProtocolError("a frame of type 0x" + Integer.toHexString(type) + " for an exec");
            }
        }

        @Override
        void fail(AgentException e) {
            handle.pid.completeExceptionally(e);
            complete(() -> handle.result.completeExceptionally(e));
        }

        private void complete(Runnable r) {
            if (queue != null) {
                queue.submit(r);
            } else {
                io.dispatch(r);
            }
        }
    }

    // ---------------------------------------------------------------- files (used by AgentFiles)

    CompletableFuture<byte[]> read(String operation, String path, long offset, int length) {
        Encoder e = new Encoder(T_READ, newId(), path.length() * 3 + 16).str(path).u64(offset).u32(length);
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_DATA);
            return rest(p);
        });
    }

    CompletableFuture<Void> write(String operation, String path, long offset, byte[] data, int off, int len, boolean append,
                                  WriteOptions options) {
        int flags = (append ? WRITE_APPEND : 0) | (options.createParents() ? WRITE_CREATE_PARENTS : 0);
        Encoder e = new Encoder(T_WRITE, newId(), path.length() * 3 + 32 + len).str(path).u32(flags).u32(options.mode())
            .u32(options.uid()).u32(options.gid()).u64(offset).bytes(data, off, len);
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_OK);
            return null;
        });
    }

    CompletableFuture<FileStat> stat(String operation, String path, boolean follow) {
        Encoder e = new Encoder(T_STAT, newId(), path.length() * 3 + 8).str(path).u8(follow ? 1 : 0);
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_STAT);
            return Protocol.stat(p);
        });
    }

    CompletableFuture<List<FileStat>> list(String operation, String path) {
        Encoder e = new Encoder(T_LIST, newId(), path.length() * 3 + 8).str(path);
        List<FileStat> entries = new ArrayList<>();
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_LIST);
            boolean more = p.get() != 0;
            long n = u32(p);
            for (long i = 0; i < n; i++) {
                entries.add(Protocol.stat(p));
            }
            return more ? MORE : entries;
        });
    }

    CompletableFuture<Void> mkdir(String operation, String path, int mode, boolean parents) {
        Encoder e = new Encoder(T_MKDIR, newId(), path.length() * 3 + 12).str(path).u32(mode).u8(parents ? 1 : 0);
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_OK);
            return null;
        });
    }

    CompletableFuture<Void> remove(String operation, String path, boolean recursive) {
        Encoder e = new Encoder(T_REMOVE, newId(), path.length() * 3 + 8).str(path).u8(recursive ? 1 : 0);
        return fileRequest(e, operation, path, (type, p) -> {
            expect(type, R_OK);
            return null;
        });
    }

    private <T> CompletableFuture<T> fileRequest(Encoder e, String operation, String path, Decoder<T> decoder) {
        SimpleCall<T> call = new SimpleCall<>(operation, decoder,
            (errno, msg) -> SandboxFileException.of(operation, path, errno, msg));
        submit(e, call);
        return call.future;
    }

    // ---------------------------------------------------------------- requests

    /** Returned by a decoder that waits for more frames of the same reply. */
    private static final Object MORE = new Object();

    @FunctionalInterface
    private interface Decoder<T> {
        /** The value, or {@link #MORE} while more frames follow. */
        Object decode(int type, ByteBuffer payload);
    }

    @FunctionalInterface
    private interface ErrorMapper {
        DsecException map(int errno, String message);
    }

    private abstract static class Call {
        /** Handles one frame on the IO thread; true when the call is done. */
        abstract boolean onFrame(int type, ByteBuffer payload);

        abstract void fail(AgentException e);
    }

    private static final class SimpleCall<T> extends Call {
        final CompletableFuture<T> future = new CompletableFuture<>();
        final String name;
        final Decoder<T> decoder;
        final ErrorMapper errors;

        SimpleCall(String name, Decoder<T> decoder, ErrorMapper errors) {
            this.name = name;
            this.decoder = decoder;
            this.errors = errors;
        }

        @Override
        @SuppressWarnings("unchecked")
        boolean onFrame(int type, ByteBuffer p) {
            if (type == R_ERROR) {
                int errno = p.getInt();
                String msg = str(p);
                future.completeExceptionally(errors != null ? errors.map(errno, msg)
                    : new AgentException(name + " failed in the agent: " + msg + " (errno " + errno + ")"));
                return true;
            }
            Object v = decoder.decode(type, p);
            if (v == MORE) {
                return false;
            }
            future.complete((T) v);
            return true;
        }

        @Override
        void fail(AgentException e) {
            future.completeExceptionally(e);
        }
    }

    private <T> CompletableFuture<T> request(Encoder e, String name, Decoder<T> decoder) {
        SimpleCall<T> call = new SimpleCall<>(name, decoder, null);
        submit(e, call);
        return call.future;
    }

    private void submit(Encoder e, Call call) {
        ByteBuffer frame;
        try {
            frame = e.finish();
        } catch (AgentException ex) {
            call.fail(ex);
            return;
        }
        send(frameId(frame), call, frame);
    }

    private static int frameId(ByteBuffer frame) {
        byte[] a = frame.array();
        return (a[5] & 0xFF) | (a[6] & 0xFF) << 8 | (a[7] & 0xFF) << 16 | (a[8] & 0xFF) << 24;
    }

    private int newId() {
        for (;;) {
            int id = nextId.incrementAndGet();
            if (id != 0) {
                synchronized (this) {
                    if (!calls.containsKey(id)) {
                        return id;
                    }
                }
            }
        }
    }

    private void send(int id, Call call, ByteBuffer frame) {
        AgentException dead;
        synchronized (this) {
            if (open) {
                calls.put(id, call);
                out.add(frame);
                if (!flushQueued && key != null) {
                    flushQueued = true;
                    io.submit(this::flush);
                }
                return;
            }
            dead = closedException();
        }
        call.fail(dead);
    }

    private AgentException closedException() {
        return closeCause == null
            ? new AgentException("the connection to the agent at " + where + " is closed")
            : new AgentException("the connection to the agent at " + where + " is closed: " + closeCause.getMessage(), closeCause);
    }

    // ---------------------------------------------------------------- IO thread

    void registered(SelectionKey k) {
        synchronized (this) {
            key = k;
            if (!open) {
                k.cancel();
                return;
            }
        }
        flush();
    }

    void flush() {
        IOException failure = null;
        synchronized (this) {
            flushQueued = false;
            if (!open || key == null) {
                return;
            }
            ByteBuffer d = io.writeBuffer();
            try {
                while (!out.isEmpty()) {
                    d.clear();
                    for (ByteBuffer b : out) {
                        if (!d.hasRemaining()) {
                            break;
                        }
                        int n = Math.min(d.remaining(), b.remaining());
                        d.put(b.array(), b.arrayOffset() + b.position(), n);
                    }
                    d.flip();
                    int written = channel.write(d);
                    while (written > 0) {
                        ByteBuffer b = out.peek();
                        int n = Math.min(written, b.remaining());
                        b.position(b.position() + n);
                        written -= n;
                        if (!b.hasRemaining()) {
                            out.poll();
                        }
                    }
                    if (d.hasRemaining()) {
                        break;
                    }
                }
                int ops = out.isEmpty() ? SelectionKey.OP_READ : SelectionKey.OP_READ | SelectionKey.OP_WRITE;
                if (key.isValid() && key.interestOps() != ops) {
                    key.interestOps(ops);
                }
            } catch (IOException e) {
                failure = e;
            }
        }
        if (failure != null) {
            closeWith(new AgentException("writing to the agent at " + where + " failed: " + failure.getMessage(), failure));
        }
    }

    void onReadable(ByteBuffer buf) {
        for (int round = 0; round < 16; round++) {
            buf.clear();
            int n;
            try {
                n = channel.read(buf);
            } catch (IOException e) {
                closeWith(new AgentException("reading from the agent at " + where + " failed: " + e.getMessage(), e));
                return;
            }
            if (n < 0) {
                closeWith(new AgentException("the agent at " + where + " closed the connection (did the sandbox stop?)"));
                return;
            }
            if (n == 0) {
                return;
            }
            buf.flip();
            while (buf.hasRemaining()) {
                if (frame == null) {
                    int k = Math.min(4 - headerFill, buf.remaining());
                    buf.get(header, headerFill, k);
                    headerFill += k;
                    if (headerFill < 4) {
                        break;
                    }
                    headerFill = 0;
                    int len = (header[0] & 0xFF) | (header[1] & 0xFF) << 8 | (header[2] & 0xFF) << 16 | (header[3] & 0xFF) << 24;
                    if (len < 5 || len > MAX_FRAME + 64) {
                        closeWith(new AgentException("the agent at " + where + " sent a frame of " + (len & 0xFFFFFFFFL)
                            + " bytes, outside 5.." + MAX_FRAME + "; the connection is broken"));
                        return;
                    }
                    frame = new byte[len];
                    frameFill = 0;
                }
                int k = Math.min(frame.length - frameFill, buf.remaining());
                buf.get(frame, frameFill, k);
                frameFill += k;
                if (frameFill == frame.length) {
                    byte[] f = frame;
                    frame = null;
                    handleFrame(f);
                    synchronized (this) {
                        if (!open) {
                            return;
                        }
                    }
                }
            }
            if (buf.limit() < buf.capacity()) {
                return;
            }
        }
    }

    private void handleFrame(byte[] f) {
        int type = f[0] & 0xFF;
        int id = (f[1] & 0xFF) | (f[2] & 0xFF) << 8 | (f[3] & 0xFF) << 16 | (f[4] & 0xFF) << 24;
        Call call;
        synchronized (this) {
            call = calls.get(id);
        }
        if (call == null) {
            log.warn("agent at {} sent a frame of type 0x{} for unknown request {}; ignored", where, Integer.toHexString(type), id);
            return;
        }
        boolean done;
        try {
            done = call.onFrame(type, payload(f));
        } catch (BufferUnderflowException | ProtocolError e) {
            String what = e instanceof ProtocolError ? e.getMessage() : "a truncated frame of type 0x" + Integer.toHexString(type);
            closeWith(new AgentException("the agent at " + where + " broke the protocol: " + what + "; the connection is closed"));
            return;
        }
        if (done) {
            synchronized (this) {
                calls.remove(id);
            }
        }
    }

    /** Closes with {@code cause} (null: closed by the caller); fails pending calls and tells the listeners. */
    void closeWith(AgentException cause) {
        List<Call> pending;
        List<Runnable> listeners;
        synchronized (this) {
            if (!open) {
                return;
            }
            open = false;
            closeCause = cause;
            pending = new ArrayList<>(calls.values());
            calls.clear();
            out.clear();
            listeners = closeListeners;
            closeListeners = null;
        }
        closeQuietly(channel);
        io.unregister(this);
        if (cause != null) {
            log.debug("agent connection {} closed: {}", where, cause.getMessage());
        }
        AgentException failure = cause != null ? cause
            : new AgentException("the connection to the agent at " + where + " was closed while the call was in flight");
        for (Call c : pending) {
            c.fail(failure);
        }
        if (listeners != null) {
            for (Runnable l : listeners) {
                io.dispatch(() -> {
                    try {
                        l.run();
                    } catch (RuntimeException e) {
                        log.warn("an agent connection close listener threw", e);
                    }
                });
            }
        }
    }

    private static void expect(int type, int wanted) {
        if (type != wanted) {
            throw new ProtocolError("a reply of type 0x" + Integer.toHexString(type) + " where 0x" + Integer.toHexString(wanted)
                + " was due");
        }
    }

    private static final class ProtocolError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ProtocolError(String message) {
            super(message, null, false, false);
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    static DsecException toDsec(Throwable t, String doing) {
        if (t instanceof ExecutionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof DsecException) {
            return (DsecException) t;
        }
        return new AgentException(doing + " failed: " + t, t);
    }

    @Override
    public String toString() {
        return "AgentConnection[" + where + (isOpen() ? "" : ", closed") + "]";
    }
}
