package io.dsec.image.internal.fuse;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CountDownLatch;

/** {@link FuseFile}s for tests. */
final class TestFuseFiles {
    private TestFuseFiles() {
    }

    /** Byte {@code i} of a pattern file: {@code i*31 mod 251}, so any range can be checked without keeping the file. */
    static byte patternByte(long i) {
        return (byte) ((i % 251) * 31 % 251);
    }

    static byte[] pattern(long offset, int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = patternByte(offset + i);
        }
        return bytes;
    }

    /** A file of {@code size} pattern bytes. */
    static FuseFile pattern(long size) {
        return new FuseFile() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public void read(long offset, ByteBuffer into) {
                long end = Math.min(size, offset + into.remaining());
                for (long i = offset; i < end; i++) {
                    into.put(patternByte(i));
                }
            }
        };
    }

    static FuseFile bytes(byte[] content) {
        return new FuseFile() {
            @Override
            public long size() {
                return content.length;
            }

            @Override
            public void read(long offset, ByteBuffer into) {
                int n = (int) Math.max(0, Math.min(into.remaining(), content.length - offset));
                into.put(content, (int) offset, n);
            }
        };
    }

    /** A file backed by a local file, read with positional reads. */
    static FuseFile local(Path file) {
        try {
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
            long size = channel.size();
            return new FuseFile() {
                @Override
                public long size() {
                    return size;
                }

                @Override
                public void read(long offset, ByteBuffer into) throws FuseErrnoException {
                    try {
                        long at = offset;
                        while (into.hasRemaining() && at < size) {
                            int n = channel.read(into, at);
                            if (n < 0) {
                                break;
                            }
                            at += n;
                        }
                    } catch (IOException e) {
                        throw new FuseErrnoException(FuseErrnoException.EIO, "read " + file, e);
                    }
                }
            };
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A pattern file whose reads wait on {@code gate} when they touch a byte of [slowStart, slowEnd). */
    static FuseFile gated(long size, long slowStart, long slowEnd, CountDownLatch gate, Runnable onBlock) {
        FuseFile inner = pattern(size);
        return new FuseFile() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public void read(long offset, ByteBuffer into) throws FuseErrnoException {
                if (offset < slowEnd && offset + into.remaining() > slowStart) {
                    onBlock.run();
                    try {
                        gate.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new FuseErrnoException(4, "interrupted", e);
                    }
                }
                inner.read(offset, into);
            }
        };
    }

    /** A file whose reads fail with {@code errno} from {@code failFrom} on. */
    static FuseFile failing(byte[] content, long failFrom, int errno) {
        FuseFile inner = bytes(content);
        return new FuseFile() {
            @Override
            public long size() {
                return content.length;
            }

            @Override
            public void read(long offset, ByteBuffer into) throws FuseErrnoException {
                if (offset + into.remaining() > failFrom) {
                    throw new FuseErrnoException(errno, "injected failure at " + offset, null);
                }
                inner.read(offset, into);
            }
        };
    }

    static byte[] readRange(Path file, long offset, int length) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocate(length);
            while (buf.hasRemaining()) {
                int n = channel.read(buf, offset + buf.position());
                if (n < 0) {
                    break;
                }
            }
            byte[] out = new byte[buf.position()];
            buf.flip().get(out);
            return out;
        }
    }

    static void write(Path file, byte[] content) throws IOException {
        Files.createDirectories(file.getParent());
        Files.write(file, content);
    }
}
