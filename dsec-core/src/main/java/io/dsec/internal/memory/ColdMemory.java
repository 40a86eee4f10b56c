package io.dsec.internal.memory;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether DAMON (the kernel's data access monitor) can be used to find sandbox memory nobody touches. Only a status for
 * now: no DAMON sessions are started.
 *
 * @param damonAvailable whether DAMON's sysfs admin interface exists
 * @param detail         what it would be used for, or why it cannot be
 */
public record ColdMemory(boolean damonAvailable, String detail) {
    public static final Path DAMON_ADMIN = Path.of("/sys/kernel/mm/damon/admin");

    public static ColdMemory probe() {
        return probe(DAMON_ADMIN);
    }

    public static ColdMemory probe(Path damonAdmin) {
        if (Files.isDirectory(damonAdmin)) {
            return new ColdMemory(true, "DAMON is available at " + damonAdmin + ": it would monitor physical memory (paddr) "
                + "to find cold pages of idle sandboxes and page them out or reclaim them (DAMOS pageout); not started yet");
        }
        return new ColdMemory(false, "DAMON is not available (" + damonAdmin + " is missing: kernel without "
            + "CONFIG_DAMON_SYSFS): cold memory cannot be found, only page cache can be reclaimed");
    }
}
