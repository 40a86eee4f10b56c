package io.dsec.internal.memory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Reads host memory pressure: PSI from /proc/pressure/memory and the main figures of /proc/meminfo. */
public final class MemoryPressure {
    private static final Logger LOG = LoggerFactory.getLogger(MemoryPressure.class);

    /** One PSI line ({@code some} or {@code full}): averages in percent, total stall time in microseconds. */
    public record Psi(double avg10, double avg60, double avg300, long totalMicros) {
        public static final Psi ABSENT = new Psi(Double.NaN, Double.NaN, Double.NaN, -1);
    }

    /** The /proc/meminfo figures dsec looks at, in bytes. */
    public record MemInfo(long totalBytes, long availableBytes, long cachedBytes, long dirtyBytes) {
    }

    /** One read. {@code psiAvailable} false means the kernel has no PSI (built without it, or psi=0): both Psi are ABSENT. */
    public record Reading(boolean psiAvailable, Psi some, Psi full, MemInfo memInfo) {
    }

    private final Path psiFile;
    private final Path meminfoFile;
    private final boolean psiAvailable;

    public MemoryPressure() {
        this(Path.of("/proc/pressure/memory"), Path.of("/proc/meminfo"));
    }

    public MemoryPressure(Path psiFile, Path meminfoFile) {
        this.psiFile = psiFile;
        this.meminfoFile = meminfoFile;
        this.psiAvailable = readablePsi(psiFile);
        if (!psiAvailable) {
            LOG.warn("memory pressure stall information (PSI) is absent: {} cannot be read (kernel without CONFIG_PSI or booted "
                + "with psi=0); memory pressure figures will be NaN", psiFile);
        }
    }

    private static boolean readablePsi(Path file) {
        try {
            Files.readString(file);
            return true;
        } catch (IOException | UncheckedIOException e) {
            return false; // absent, or EOPNOTSUPP when PSI is compiled in but disabled
        }
    }

    public boolean psiAvailable() {
        return psiAvailable;
    }

    public Reading read() {
        MemInfo mem;
        try {
            mem = parseMeminfo(Files.readString(meminfoFile));
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + meminfoFile, e);
        }
        if (!psiAvailable) {
            return new Reading(false, Psi.ABSENT, Psi.ABSENT, mem);
        }
        try {
            Map<String, Psi> psi = parsePsi(Files.readString(psiFile));
            return new Reading(true, psi.getOrDefault("some", Psi.ABSENT), psi.getOrDefault("full", Psi.ABSENT), mem);
        } catch (NoSuchFileException e) {
            return new Reading(false, Psi.ABSENT, Psi.ABSENT, mem);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + psiFile, e);
        }
    }

    /** Parses PSI text: lines such as {@code some avg10=0.12 avg60=0.05 avg300=0.00 total=603018}, keyed by their first word. */
    public static Map<String, Psi> parsePsi(String text) {
        Map<String, Psi> out = new HashMap<>();
        for (String line : text.split("\n")) {
            String[] words = line.trim().split("\\s+");
            if (words.length < 2) {
                continue;
            }
            Map<String, String> kv = new HashMap<>();
            for (int i = 1; i < words.length; i++) {
                int eq = words[i].indexOf('=');
                if (eq > 0) {
                    kv.put(words[i].substring(0, eq), words[i].substring(eq + 1));
                }
            }
            try {
                out.put(words[0], new Psi(dbl(kv.get("avg10")), dbl(kv.get("avg60")), dbl(kv.get("avg300")),
                    kv.containsKey("total") ? Long.parseLong(kv.get("total")) : -1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("unreadable PSI line: " + line, e);
            }
        }
        return out;
    }

    private static double dbl(String s) {
        return s == null ? Double.NaN : Double.parseDouble(s);
    }

    /** Parses /proc/meminfo text ({@code MemTotal:       24576000 kB}); a missing field is -1. */
    public static MemInfo parseMeminfo(String text) {
        Map<String, Long> kb = new HashMap<>();
        for (String line : text.split("\n")) {
            int colon = line.indexOf(':');
            if (colon <= 0) {
                continue;
            }
            String[] value = line.substring(colon + 1).trim().split("\\s+");
            try {
                long v = Long.parseLong(value[0]);
                kb.put(line.substring(0, colon).trim(), value.length > 1 && value[1].equals("kB") ? v * 1024 : v);
            } catch (NumberFormatException e) {
                // not a number: not a field we read
            }
        }
        return new MemInfo(kb.getOrDefault("MemTotal", -1L), kb.getOrDefault("MemAvailable", -1L),
            kb.getOrDefault("Cached", -1L), kb.getOrDefault("Dirty", -1L));
    }
}
