package io.dsec;

import java.util.List;
import java.util.Optional;

/** The snapshots in a host's layer store. */
public interface Snapshots {
    /** A snapshot by id, from this host or any host using the same store. */
    Optional<Snapshot> get(String id);

    List<Snapshot> list();

    /**
     * Deletes a snapshot's record and releases its diff. Refused while sandboxes on this host run from it or other
     * snapshots are built on it, unless {@code force}.
     */
    void delete(String id, boolean force);

    default void delete(String id) {
        delete(id, false);
    }
}
