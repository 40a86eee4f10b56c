package io.dsec.internal.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.dsec.AgentException;
import io.dsec.FileStat;
import io.dsec.NoSuchSandboxFileException;
import io.dsec.SandboxFiles;
import io.dsec.WriteOptions;

/** {@link SandboxFiles} over an agent connection; big files move in 1 MiB chunks. */
public final class AgentFiles implements SandboxFiles {
    /** How long a synchronous call waits for the agent. */
    static final long WAIT_MINUTES = 5;
    /** Chunk writes in flight at once. */
    private static final int WRITE_WINDOW = 4;

    private final AgentConnection connection;

    public AgentFiles(AgentConnection connection) {
        this.connection = Objects.requireNonNull(connection, "connection");
    }

    @Override
    public byte[] read(String path) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        long offset = 0;
        for (;;) {
            byte[] chunk = await(connection.read("read", path, offset, Protocol.IO_CHUNK));
            all.write(chunk, 0, chunk.length);
            offset += chunk.length;
            if (chunk.length < Protocol.IO_CHUNK) {
                return all.toByteArray();
            }
        }
    }

    @Override
    public void write(String path, byte[] data, WriteOptions options) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(options, "options");
        writeChunks(path, data, 0, data.length, 0, options);
    }

    /** Writes data[off, off+len) at fileOffset; truncates first when fileOffset is 0. */
    private void writeChunks(String path, byte[] data, int off, int len, long fileOffset, WriteOptions options) {
        ArrayDeque<CompletableFuture<Void>> inFlight = new ArrayDeque<>();
        int done = 0;
        do {
            int n = Math.min(Protocol.IO_CHUNK, len - done);
            long at = fileOffset + done;
            inFlight.add(connection.write("write", path, at, data, off + done, n, at != 0, options));
            done += n;
            if (inFlight.size() >= WRITE_WINDOW) {
                await(inFlight.poll());
            }
        } while (done < len);
        while (!inFlight.isEmpty()) {
            await(inFlight.poll());
        }
    }

    @Override
    public List<FileStat> list(String path) {
        return await(connection.list("list", path));
    }

    @Override
    public FileStat stat(String path) {
        return await(connection.stat("stat", path, true));
    }

    @Override
    public FileStat lstat(String path) {
        return await(connection.stat("lstat", path, false));
    }

    @Override
    public boolean exists(String path) {
        try {
            await(connection.stat("exists", path, true));
            return true;
        } catch (NoSuchSandboxFileException e) {
            return false;
        }
    }

    @Override
    public void mkdirs(String path, int mode) {
        await(connection.mkdir("mkdirs", path, mode, true));
    }

    @Override
    public void remove(String path) {
        await(connection.remove("remove", path, false));
    }

    @Override
    public void removeRecursively(String path) {
        try {
            await(connection.remove("removeRecursively", path, true));
        } catch (NoSuchSandboxFileException e) {
            // nothing to remove
        }
    }

    @Override
    public InputStream openRead(String path) {
        return new ChunkInputStream(path);
    }

    @Override
    public OutputStream openWrite(String path, WriteOptions options) {
        return new ChunkOutputStream(path, Objects.requireNonNull(options, "options"));
    }

    /** Waits for f, unwrapping failures so the caller sees the DsecException itself. */
    static <T> T await(CompletableFuture<T> f) {
        try {
            return f.get(WAIT_MINUTES, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw AgentConnection.toDsec(e, "a file call");
        } catch (TimeoutException e) {
            throw new AgentException("the agent did not answer a file call within " + WAIT_MINUTES + " minutes");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentException("interrupted while waiting for the agent", e);
        }
    }

    private final class ChunkInputStream extends InputStream {
        private final String path;
        private byte[] chunk = new byte[0];
        private int pos;
        private long offset;
        private boolean eof;
        private boolean closed;

        ChunkInputStream(String path) {
            this.path = path;
        }

        private boolean fill() throws IOException {
            if (closed) {
                throw new IOException("stream of " + path + " is closed");
            }
            while (pos >= chunk.length) {
                if (eof) {
                    return false;
                }
                chunk = await(connection.read("read", path, offset, Protocol.IO_CHUNK));
                pos = 0;
                offset += chunk.length;
                eof = chunk.length < Protocol.IO_CHUNK;
            }
            return true;
        }

        @Override
        public int read() throws IOException {
            return fill() ? chunk[pos++] & 0xFF : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            if (!fill()) {
                return -1;
            }
            int n = Math.min(len, chunk.length - pos);
            System.arraycopy(chunk, pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public int available() {
            return closed ? 0 : chunk.length - pos;
        }

        @Override
        public void close() {
            closed = true;
            chunk = new byte[0];
        }
    }

    private final class ChunkOutputStream extends OutputStream {
        private final String path;
        private final WriteOptions options;
        private byte[] buf = new byte[8192];
        private int len;
        private long offset;
        private boolean started;
        private boolean closed;

        ChunkOutputStream(String path, WriteOptions options) {
            this.path = path;
            this.options = options;
        }

        @Override
        public void write(int b) throws IOException {
            ensureOpen();
            if (len == buf.length) {
                grow(len + 1);
            }
            buf[len++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int n) throws IOException {
            Objects.checkFromIndexSize(off, n, b.length);
            ensureOpen();
            while (n > 0) {
                if (len == Protocol.IO_CHUNK) {
                    sendChunk();
                }
                int k = Math.min(n, Protocol.IO_CHUNK - len);
                grow(len + k);
                System.arraycopy(b, off, buf, len, k);
                len += k;
                off += k;
                n -= k;
            }
            if (len == Protocol.IO_CHUNK) {
                sendChunk();
            }
        }

        private void grow(int need) {
            if (need > buf.length) {
                buf = java.util.Arrays.copyOf(buf, Math.min(Protocol.IO_CHUNK, Math.max(need, buf.length * 2)));
            }
        }

        private void sendChunk() {
            if (len == 0 && started) {
                return;
            }
            await(connection.write("write", path, offset, buf, 0, len, started, options));
            started = true;
            offset += len;
            len = 0;
        }

        @Override
        public void flush() throws IOException {
            ensureOpen();
            if (len > 0) {
                sendChunk();
            }
        }

        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            if (len > 0 || !started) {
                sendChunk();
            }
            buf = null;
        }

        private void ensureOpen() throws IOException {
            if (closed) {
                throw new IOException("stream to " + path + " is closed");
            }
        }
    }
}
