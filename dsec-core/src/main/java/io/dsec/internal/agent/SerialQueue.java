package io.dsec.internal.agent;

import java.util.ArrayDeque;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Runs tasks one at a time, in order, on an {@link AgentIo}'s executor; holds no thread while empty. */
final class SerialQueue implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(SerialQueue.class);

    private final AgentIo io;
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>(4);
    private boolean running;

    SerialQueue(AgentIo io) {
        this.io = io;
    }

    void submit(Runnable task) {
        synchronized (this) {
            tasks.add(task);
            if (running) {
                return;
            }
            running = true;
        }
        io.dispatch(this);
    }

    @Override
    public void run() {
        for (;;) {
            Runnable task;
            synchronized (this) {
                task = tasks.poll();
                if (task == null) {
                    running = false;
                    return;
                }
            }
            try {
                task.run();
            } catch (Throwable t) {
                log.warn("an exec output callback threw; its exec goes on", t);
            }
        }
    }
}
