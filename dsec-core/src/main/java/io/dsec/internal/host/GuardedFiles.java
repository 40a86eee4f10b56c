package io.dsec.internal.host;

import io.dsec.FileStat;
import io.dsec.SandboxFiles;
import io.dsec.WriteOptions;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/** Checks the sandbox is usable before each file call, so a closed or dead sandbox fails with the reason. */
final class GuardedFiles implements SandboxFiles {
    private final SandboxFiles delegate;
    private final Runnable guard;

    GuardedFiles(SandboxFiles delegate, Runnable guard) {
        this.delegate = delegate;
        this.guard = guard;
    }

    @Override
    public byte[] read(String path) {
        guard.run();
        return delegate.read(path);
    }

    @Override
    public void write(String path, byte[] data, WriteOptions options) {
        guard.run();
        delegate.write(path, data, options);
    }

    @Override
    public List<FileStat> list(String path) {
        guard.run();
        return delegate.list(path);
    }

    @Override
    public FileStat stat(String path) {
        guard.run();
        return delegate.stat(path);
    }

    @Override
    public FileStat lstat(String path) {
        guard.run();
        return delegate.lstat(path);
    }

    @Override
    public boolean exists(String path) {
        guard.run();
        return delegate.exists(path);
    }

    @Override
    public void mkdirs(String path, int mode) {
        guard.run();
        delegate.mkdirs(path, mode);
    }

    @Override
    public void remove(String path) {
        guard.run();
        delegate.remove(path);
    }

    @Override
    public void removeRecursively(String path) {
        guard.run();
        delegate.removeRecursively(path);
    }

    @Override
    public InputStream openRead(String path) {
        guard.run();
        return delegate.openRead(path);
    }

    @Override
    public OutputStream openWrite(String path, WriteOptions options) {
        guard.run();
        return delegate.openWrite(path, options);
    }
}
