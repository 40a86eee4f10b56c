package io.dsec.image.internal.store;

import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Blobs as files under a root directory, one file per key ({@code chunks/sha256/ab…} is {@code <root>/chunks/sha256/ab…}).
 * Works on any POSIX filesystem: local disk, or a 3FS, NFS or CephFS mount shared by hosts.
 *
 * <p>A put writes a temporary file next to the target, named {@code #tmp-<random>} (the '#' never appears in keys,
 * so listings skip temporaries), optionally fsyncs it, and renames it over the target: readers see the whole blob or
 * none, and concurrent writers of one key each rename a complete file. Empty directories are left in place, so a put
 * never races a delete removing its parent.
 */
public final class DirectoryBlobStore implements BlobStore {
    private final Path root;
    private final boolean fsync;

    /**
     * @param root  the directory; created when missing
     * @param fsync whether a put flushes the file and its directory to stable storage before it returns
     */
    public DirectoryBlobStore(Path root, boolean fsync) {
        this.root = root.toAbsolutePath().normalize();
        this.fsync = fsync;
        try {
            Files.createDirectories(this.root);
        } catch (IOException e) {
            throw new ImageFetchException("cannot create the blob directory " + this.root + ": " + e
                + "; check that the path is a directory (or its parent exists) and is writable", e);
        }
    }

    public Path root() {
        return root;
    }

    @Override
    public byte[] get(String key) {
        Path file = file(key);
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw readFailure(key, file, e);
        }
    }

    @Override
    public byte[] getRange(String key, long offset, int length) {
        Path file = file(key);
        Keys.checkRange(offset, length);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (offset >= size || length == 0) {
                return new byte[0];
            }
            int n = (int) Math.min(length, size - offset);
            ByteBuffer buf = ByteBuffer.allocate(n);
            long pos = offset;
            while (buf.hasRemaining()) {
                int r = ch.read(buf, pos);
                if (r < 0) {
                    break;
                }
                pos += r;
            }
            return buf.position() == n ? buf.array() : Arrays.copyOf(buf.array(), buf.position());
        } catch (IOException e) {
            throw readFailure(key, file, e);
        }
    }

    /** A missing blob (also a directory, or a parent that is a file: ENOTDIR) is not found; anything else is a failure. */
    private RuntimeException readFailure(String key, Path file, IOException e) {
        if (e instanceof NoSuchFileException || e instanceof NotDirectoryException || !Files.isRegularFile(file)) {
            return new BlobNotFoundException(describe(), key);
        }
        return failure("read", key, e);
    }

    @Override
    public boolean exists(String key) {
        return Files.isRegularFile(file(key));
    }

    @Override
    public void put(String key, byte[] data) {
        Path target = file(key);
        Path dir = target.getParent();
        // Short, so that any leaf up to the filesystem's 255-byte name limit has room; '#' keeps it out of listings.
        Path temp = dir.resolve("#tmp-" + Long.toHexString(ThreadLocalRandom.current().nextLong())
            + Long.toHexString(System.nanoTime() & 0xffffff));
        try {
            Files.createDirectories(dir);
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                if (fsync) {
                    ch.force(true);
                }
            }
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            if (fsync) {
                syncDirectory(dir);
            }
        } catch (IOException e) {
            deleteQuietly(temp);
            throw failure("write", key, e);
        } catch (RuntimeException | Error e) {
            deleteQuietly(temp);
            throw e;
        }
    }

    @Override
    public List<String> list(String prefix) {
        Keys.checkPrefix(prefix);
        // Walk only the deepest directory the prefix names in full.
        int slash = prefix.lastIndexOf('/');
        Path start = slash < 0 ? root : root.resolve(prefix.substring(0, slash));
        if (!Files.isDirectory(start)) {
            return List.of();
        }
        List<String> keys = new ArrayList<>();
        try {
            Files.walkFileTree(start, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                    if (attrs.isRegularFile()) {
                        String key = root.relativize(file).toString();
                        if (key.startsWith(prefix) && Keys.isValid(key)) {
                            keys.add(key);
                        }
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException exc) throws IOException {
                    if (exc instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE; // a temporary renamed away, or a blob deleted meanwhile
                    }
                    throw exc;
                }
            });
        } catch (IOException e) {
            throw failure("list", prefix + "*", e);
        }
        Collections.sort(keys);
        return keys;
    }

    @Override
    public void delete(String key) {
        Path file = file(key);
        try {
            if (!Files.isDirectory(file)) {
                Files.deleteIfExists(file);
            }
        } catch (NoSuchFileException | NotDirectoryException e) {
            // absent
        } catch (IOException e) {
            throw failure("delete", key, e);
        }
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public String describe() {
        return "directory " + root;
    }

    @Override
    public String toString() {
        return describe();
    }

    private Path file(String key) {
        return root.resolve(Keys.check(key));
    }

    private ImageFetchException failure(String what, String key, IOException e) {
        String hint;
        if (e instanceof AccessDeniedException) {
            hint = "check the permissions of " + root;
        } else if (e instanceof FileSystemException fse && fse.getReason() != null && fse.getReason().contains("space")) {
            hint = "free space on the filesystem of " + root;
        } else {
            hint = "check that " + root + " is mounted and healthy";
        }
        return new ImageFetchException("cannot " + what + " blob " + key + " in " + describe() + ": " + e + "; " + hint, e);
    }

    private static void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some filesystems refuse fsync on a directory; the file itself is synced.
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // best effort
        }
    }
}
