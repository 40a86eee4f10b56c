package io.dsec.internal.agent;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.dsec.AgentException;
import io.dsec.SandboxClosedException;

/**
 * The IO of every agent connection of a host: one selector thread reads and writes all of them, so an idle
 * connection costs no thread and no buffer. Create one per host and close it last.
 *
 * <p>Exec line callbacks and exec completions run on the executor (in order per exec); replies to the other
 * requests complete on the IO thread, so a caller waiting on them never needs a free executor thread. The executor
 * must not be one whose threads may all be blocked waiting on exec results (a small fixed pool can deadlock then);
 * {@code new AgentIo()} uses its own pool of daemon threads that grows on demand and shrinks when idle.
 */
public final class AgentIo implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AgentIo.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final Selector selector;
    private final Thread thread;
    private final Executor executor;
    private final ExecutorService ownExecutor;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Set<AgentConnection> connections = ConcurrentHashMap.newKeySet();
    /** Shared by all connections; used on the IO thread only. */
    private final ByteBuffer readBuffer = ByteBuffer.allocateDirect(256 << 10);
    private final ByteBuffer writeBuffer = ByteBuffer.allocateDirect(256 << 10);
    private volatile boolean open = true;

    /** An IO thread with its own callback pool. */
    public AgentIo() {
        this(null);
    }

    /** An IO thread whose exec callbacks run on {@code executor}, or on its own pool when null. */
    public AgentIo(Executor executor) {
        int n = INSTANCES.incrementAndGet();
        if (executor == null) {
            AtomicInteger threads = new AtomicInteger();
            ThreadPoolExecutor pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
                Thread t = new Thread(r, "dsec-agent-callbacks-" + n + "-" + threads.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            this.ownExecutor = pool;
            this.executor = pool;
        } else {
            this.ownExecutor = null;
            this.executor = executor;
        }
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a selector for agent connections", e);
        }
        this.thread = new Thread(this::loop, "dsec-agent-io-" + n);
        thread.setDaemon(true);
        thread.start();
    }

    public boolean isOpen() {
        return open;
    }

    /** The connections open on this IO thread. */
    public int connectionCount() {
        return connections.size();
    }

    /** Closes every connection (failing their calls) and stops the IO thread. Idempotent. */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        for (AgentConnection c : new ArrayList<>(connections)) {
            c.closeWith(new AgentException("the host's agent IO was closed"));
        }
        selector.wakeup();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (ownExecutor != null) {
            ownExecutor.shutdown();
        }
    }

    // ---- used by AgentConnection ----

    void register(AgentConnection c, SocketChannel channel) {
        if (!open) {
            throw new SandboxClosedException("the host's agent IO is closed");
        }
        connections.add(c);
        submit(() -> {
            try {
                SelectionKey key = channel.register(selector, SelectionKey.OP_READ, c);
                c.registered(key);
            } catch (IOException | RuntimeException e) {
                c.closeWith(new AgentException("cannot watch the agent connection: " + e, e));
            }
        });
    }

    void unregister(AgentConnection c) {
        connections.remove(c);
    }

    /** Runs r on the IO thread. */
    void submit(Runnable r) {
        tasks.add(r);
        if (Thread.currentThread() != thread) {
            selector.wakeup();
        }
        if (!open) {
            selector.wakeup();
        }
    }

    /** Runs r on the executor; inline when the executor refuses (shut down). */
    void dispatch(Runnable r) {
        try {
            executor.execute(r);
        } catch (RejectedExecutionException e) {
            r.run();
        }
    }

    boolean onIoThread() {
        return Thread.currentThread() == thread;
    }

    ByteBuffer writeBuffer() {
        return writeBuffer;
    }

    private void loop() {
        try {
            while (open) {
                selector.select();
                runTasks();
                Set<SelectionKey> keys = selector.selectedKeys();
                for (SelectionKey key : keys) {
                    AgentConnection c = (AgentConnection) key.attachment();
                    try {
                        if (!key.isValid()) {
                            continue;
                        }
                        if (key.isReadable()) {
                            c.onReadable(readBuffer);
                        }
                        if (key.isValid() && key.isWritable()) {
                            c.flush();
                        }
                    } catch (java.nio.channels.CancelledKeyException e) {
                        // Closed by another thread while this one was serving it: nothing left to do.
                    } catch (RuntimeException e) {
                        log.warn("agent connection failed", e);
                        c.closeWith(new AgentException("agent connection failed: " + e, e));
                    }
                }
                keys.clear();
            }
        } catch (IOException | ClosedSelectorException e) {
            log.error("agent IO thread stopped", e);
        } catch (Throwable t) {
            log.error("agent IO thread died", t);
        } finally {
            open = false;
            runTasks();
            List<AgentConnection> left = new ArrayList<>(connections);
            for (AgentConnection c : left) {
                c.closeWith(new AgentException("the host's agent IO stopped"));
            }
            try {
                selector.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }

    private void runTasks() {
        Runnable r;
        while ((r = tasks.poll()) != null) {
            try {
                r.run();
            } catch (RuntimeException e) {
                log.warn("agent IO task failed", e);
            }
        }
    }
}
