package io.dsec.internal.admission;

import java.time.Duration;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** Runs admission's periodic re-evaluation; tests pass one that never fires and call {@code tick()} themselves. */
public interface Ticker {

    /** Runs {@code task} every {@code period} until the returned handle is closed. */
    AutoCloseable every(Duration period, Runnable task);

    /** One daemon thread of its own. */
    static Ticker daemon(String name) {
        return (period, task) -> {
            ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, name);
                t.setDaemon(true);
                return t;
            });
            pool.setRemoveOnCancelPolicy(true);
            long ms = Math.max(1, period.toMillis());
            pool.scheduleWithFixedDelay(task, ms, ms, TimeUnit.MILLISECONDS);
            return pool::shutdownNow;
        };
    }

    /** Never fires. */
    static Ticker manual() {
        return (period, task) -> () -> { };
    }
}
