package io.dsec.internal.admission;

import java.time.Duration;
import java.util.Locale;

/** How admission messages print sizes, cores, ratios and waits. */
final class Units {
    private Units() {
    }

    static String bytes(double b) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        int i = 0;
        double v = b;
        while (Math.abs(v) >= 1024 && i < units.length - 1) {
            v /= 1024;
            i++;
        }
        return i == 0 ? String.format(Locale.ROOT, "%.0f B", v) : String.format(Locale.ROOT, "%.1f %s", v, units[i]);
    }

    static String cores(double c) {
        return String.format(Locale.ROOT, "%.2f cores", c);
    }

    static String number(double n) {
        return n == Math.rint(n) && Math.abs(n) < 1e15 ? String.valueOf((long) n) : String.format(Locale.ROOT, "%.2f", n);
    }

    static String ratio(double r) {
        return (r == Math.rint(r) ? String.valueOf((long) r) : String.format(Locale.ROOT, "%.1f", r)) + "x";
    }

    static String duration(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0);
    }
}
