package io.dsec.internal.host;

import io.dsec.DsecException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An exclusive lock on a state directory: one host at a time owns its mounts and sandboxes, and a second one
 * (in this JVM or another process) would take the first's layer mounts for leftovers of a crash.
 */
final class StateDirLock implements AutoCloseable {
    private final FileChannel channel;
    private final FileLock lock;

    private StateDirLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    static StateDirLock acquire(Path stateDir) {
        Path file = stateDir.resolve("host.lock");
        FileChannel channel = null;
        try {
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock = channel.tryLock();
            if (lock == null) {
                throw busy(stateDir, null);
            }
            return new StateDirLock(channel, lock);
        } catch (OverlappingFileLockException e) {
            closeQuietly(channel);
            throw busy(stateDir, e);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new DsecException("cannot lock " + file + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    private static DsecException busy(Path stateDir, Exception cause) {
        return new DsecException("another SandboxHost (in this JVM or another process) is using the state directory " + stateDir
            + ": close it first, or give this host its own directory with Sandboxes.builder().stateDir(...)", cause);
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // The lock failed already; that is the error to report.
            }
        }
    }

    @Override
    public void close() throws IOException {
        try {
            lock.release();
        } finally {
            channel.close();
        }
    }
}
