package io.dsec.image.internal.store;

import io.dsec.InvalidSpecException;

/**
 * Checks blob keys against the {@link io.dsec.image.BlobStore} contract: 1-512 characters of {@code [a-z0-9._/-]}, not
 * starting or ending with '/', no empty, "." or ".." segments, and (so that keys are file names) no segment over 255. The same rule in every store, so that a key that works
 * on a directory works on S3 and HTTP too.
 */
public final class Keys {
    public static final int MAX_LENGTH = 512;
    /** Longest segment between slashes: the file name limit of POSIX filesystems, so every key works on a directory. */
    public static final int MAX_SEGMENT = 255;
    private static final String FIX = "use 1-512 characters of [a-z0-9._/-], not starting or ending with '/', "
        + "without empty, '.' or '..' segments or segments over 255 characters, e.g. chunks/sha256/<hex>";

    private Keys() {
    }

    /** Returns {@code key} when it is a valid key, else throws {@link InvalidSpecException} (field "key"). */
    public static String check(String key) {
        if (key == null || key.isEmpty() || key.length() > MAX_LENGTH) {
            throw new InvalidSpecException("key", key == null ? null : shorten(key), FIX);
        }
        if (!validChars(key) || key.charAt(0) == '/' || key.charAt(key.length() - 1) == '/') {
            throw new InvalidSpecException("key", shorten(key), FIX);
        }
        int start = 0;
        while (start <= key.length()) {
            int end = key.indexOf('/', start);
            if (end < 0) {
                end = key.length();
            }
            String segment = key.substring(start, end);
            if (segment.isEmpty() || segment.equals(".") || segment.equals("..") || segment.length() > MAX_SEGMENT) {
                throw new InvalidSpecException("key", shorten(key), FIX);
            }
            start = end + 1;
        }
        return key;
    }

    /** True when {@code key} passes {@link #check}. */
    public static boolean isValid(String key) {
        try {
            check(key);
            return true;
        } catch (InvalidSpecException e) {
            return false;
        }
    }

    /**
     * Returns {@code prefix} when it can start keys: empty, or characters of {@code [a-z0-9._/-]} not starting with '/'
     * and without ".." segments.
     */
    public static String checkPrefix(String prefix) {
        String fix = "use \"\" or the start of a key, e.g. chunks/sha256/";
        if (prefix == null || prefix.length() > MAX_LENGTH) {
            throw new InvalidSpecException("prefix", prefix == null ? null : shorten(prefix), fix);
        }
        if (prefix.isEmpty()) {
            return prefix;
        }
        if (!validChars(prefix) || prefix.charAt(0) == '/' || prefix.contains("//") || prefix.equals("..")
            || prefix.startsWith("../") || prefix.contains("/../") || prefix.endsWith("/..")) {
            throw new InvalidSpecException("prefix", shorten(prefix), fix);
        }
        return prefix;
    }

    static boolean validChars(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '/' || c == '-';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    private static String shorten(String s) {
        String q = s.length() > 100 ? s.substring(0, 100) + "… (" + s.length() + " characters)" : s;
        return '"' + q + '"';
    }

    /** Throws {@link InvalidSpecException} unless {@code 0 <= offset} and {@code 0 <= length}. */
    public static void checkRange(long offset, int length) {
        if (offset < 0) {
            throw new InvalidSpecException("offset", offset, "use an offset >= 0");
        }
        if (length < 0) {
            throw new InvalidSpecException("length", length, "use a length >= 0");
        }
    }
}
