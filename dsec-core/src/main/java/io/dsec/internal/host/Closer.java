package io.dsec.internal.host;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Collects things to undo and undoes them in reverse order. The first failure is thrown; later ones are
 * attached to it as suppressed exceptions, so one bad unmount never hides another.
 */
final class Closer implements AutoCloseable {
    interface Step {
        void run() throws Exception;
    }

    private final Deque<Step> steps = new ArrayDeque<>();

    void add(Step step) {
        steps.push(step);
    }

    /** Undoes every step, newest first. */
    @Override
    public void close() {
        RuntimeException first = null;
        while (!steps.isEmpty()) {
            try {
                steps.pop().run();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException re ? re : new io.dsec.DsecException(e.getMessage(), e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Undoes every step after a failure; failures here become suppressed exceptions of {@code cause}. */
    void rollback(Throwable cause) {
        try {
            close();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }
}
