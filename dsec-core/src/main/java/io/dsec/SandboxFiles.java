package io.dsec;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Files inside a sandbox, reached through its agent. Paths are absolute paths as the sandbox sees them.
 * Failures are {@link SandboxFileException}s carrying the errno ({@link NoSuchSandboxFileException} and friends).
 */
public interface SandboxFiles {
    byte[] read(String path);

    default String readString(String path) {
        return new String(read(path), StandardCharsets.UTF_8);
    }

    /** Writes (creates or replaces) a file with mode 0644, making missing parents. */
    default void write(String path, byte[] data) {
        write(path, data, WriteOptions.DEFAULT);
    }

    default void writeString(String path, String text) {
        write(path, text.getBytes(StandardCharsets.UTF_8));
    }

    void write(String path, byte[] data, WriteOptions options);

    /** The entries of a directory, sorted by name, without {@code .} and {@code ..}. */
    List<FileStat> list(String path);

    /** Follows symlinks. */
    FileStat stat(String path);

    /** Does not follow a final symlink. */
    FileStat lstat(String path);

    boolean exists(String path);

    /** Makes a directory and any missing parents; no error when it exists already. */
    void mkdirs(String path, int mode);

    default void mkdirs(String path) {
        mkdirs(path, 0755);
    }

    /** Removes a file or an empty directory. */
    void remove(String path);

    /** Removes a file or a directory tree; no error when it does not exist. */
    void removeRecursively(String path);

    /** Streams a file in chunks, for files too large to hold in memory. */
    InputStream openRead(String path);

    /** Streams into a file (created or truncated), in chunks. */
    OutputStream openWrite(String path, WriteOptions options);
}
