package io.dsec.internal.admission;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * Waiting items in admission order: higher priority first; within a priority, round-robin across tags (each tag
 * with items waiting gets one turn in rotation, a new tag joins at the end); within a tag, first come first served.
 * Not thread-safe.
 */
final class FairQueue<T> {
    private final ToIntFunction<T> priority;
    private final Function<T, String> tag;
    private final TreeMap<Integer, Level<T>> levels = new TreeMap<>(Comparator.reverseOrder());
    private int size;

    FairQueue(ToIntFunction<T> priority, Function<T, String> tag) {
        this.priority = priority;
        this.tag = tag;
    }

    void add(T item) {
        levels.computeIfAbsent(priority.applyAsInt(item), p -> new Level<>()).add(tag.apply(item), item);
        size++;
    }

    /** The next item to admit, or null. */
    T peek() {
        return levels.isEmpty() ? null : levels.firstEntry().getValue().peek();
    }

    /** Takes the next item and moves its tag to the end of its rotation. */
    T poll() {
        if (levels.isEmpty()) {
            return null;
        }
        Map.Entry<Integer, Level<T>> first = levels.firstEntry();
        T item = first.getValue().poll();
        if (first.getValue().isEmpty()) {
            levels.remove(first.getKey());
        }
        size--;
        return item;
    }

    boolean remove(T item) {
        int p = priority.applyAsInt(item);
        Level<T> level = levels.get(p);
        if (level == null || !level.remove(tag.apply(item), item)) {
            return false;
        }
        if (level.isEmpty()) {
            levels.remove(p);
        }
        size--;
        return true;
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** Every waiting item, in no particular order. */
    List<T> all() {
        List<T> out = new ArrayList<>(size);
        for (Level<T> level : levels.values()) {
            level.byTag.values().forEach(out::addAll);
        }
        return out;
    }

    void clear() {
        levels.clear();
        size = 0;
    }

    private static final class Level<T> {
        final Map<String, ArrayDeque<T>> byTag = new HashMap<>();
        final ArrayDeque<String> rotation = new ArrayDeque<>();

        void add(String tag, T item) {
            ArrayDeque<T> q = byTag.get(tag);
            if (q == null) {
                q = new ArrayDeque<>();
                byTag.put(tag, q);
                rotation.addLast(tag);
            }
            q.addLast(item);
        }

        T peek() {
            return byTag.get(rotation.peekFirst()).peekFirst();
        }

        T poll() {
            String t = rotation.pollFirst();
            ArrayDeque<T> q = byTag.get(t);
            T item = q.pollFirst();
            if (q.isEmpty()) {
                byTag.remove(t);
            } else {
                rotation.addLast(t);
            }
            return item;
        }

        boolean remove(String tag, T item) {
            ArrayDeque<T> q = byTag.get(tag);
            if (q == null || !q.removeFirstOccurrence(item)) {
                return false;
            }
            if (q.isEmpty()) {
                byTag.remove(tag);
                rotation.remove(tag);
            }
            return true;
        }

        boolean isEmpty() {
            return rotation.isEmpty();
        }
    }
}
