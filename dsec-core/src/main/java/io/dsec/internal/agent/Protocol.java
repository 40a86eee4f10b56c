package io.dsec.internal.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

import io.dsec.AgentException;
import io.dsec.FileStat;
import io.dsec.FileType;

/** The agent's wire format (see {@code src/main/c/agent/PROTOCOL.md}): constants, an encoder and decoders. */
final class Protocol {
    private Protocol() {
    }

    static final int VERSION = 1;
    /** Most bytes after a frame's length field, both ways. */
    static final int MAX_FRAME = 4 << 20;
    /** Most bytes one READ returns and one WRITE carries. */
    static final int IO_CHUNK = 1 << 20;

    // host -> agent
    static final int T_HELLO = 0x01, T_PING = 0x02, T_EXEC = 0x10, T_SIGNAL = 0x11;
    static final int T_READ = 0x20, T_WRITE = 0x21, T_STAT = 0x22, T_LIST = 0x23, T_MKDIR = 0x24, T_REMOVE = 0x25;
    // agent -> host
    static final int R_HELLO = 0x81, R_PONG = 0x82, R_OK = 0x83, R_ERROR = 0x84;
    static final int R_EXEC_STARTED = 0x90, R_STDOUT = 0x91, R_STDERR = 0x92, R_STDOUT_TAIL = 0x93, R_STDERR_TAIL = 0x94, R_EXIT = 0x95;
    static final int R_DATA = 0xA0, R_STAT = 0xA1, R_LIST = 0xA2;

    static final int WRITE_APPEND = 1, WRITE_CREATE_PARENTS = 2;

    private static final FileType[] TYPES = FileType.values();

    /** Builds one frame: length, type, id, payload (little-endian). */
    static final class Encoder {
        private byte[] buf;
        private int len;

        Encoder(int type, int id, int sizeHint) {
            buf = new byte[Math.max(16, sizeHint + 9)];
            len = 4;
            u8(type);
            u32(id);
        }

        private void ensure(int n) {
            if (buf.length - len < n) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
            }
        }

        Encoder u8(int v) {
            ensure(1);
            buf[len++] = (byte) v;
            return this;
        }

        Encoder u32(int v) {
            ensure(4);
            buf[len++] = (byte) v;
            buf[len++] = (byte) (v >>> 8);
            buf[len++] = (byte) (v >>> 16);
            buf[len++] = (byte) (v >>> 24);
            return this;
        }

        Encoder u64(long v) {
            u32((int) v);
            return u32((int) (v >>> 32));
        }

        Encoder bytes(byte[] b, int off, int n) {
            u32(n);
            ensure(n);
            System.arraycopy(b, off, buf, len, n);
            len += n;
            return this;
        }

        Encoder str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            return bytes(b, 0, b.length);
        }

        /** The finished frame; throws when it is over the cap. */
        ByteBuffer finish() {
            int n = len - 4;
            if (n > MAX_FRAME) {
                throw new AgentException("a request of " + n + " bytes is over the agent's frame limit of " + MAX_FRAME
                    + " bytes; send less (argv, env and stdin of one exec share this limit)");
            }
            buf[0] = (byte) n;
            buf[1] = (byte) (n >>> 8);
            buf[2] = (byte) (n >>> 16);
            buf[3] = (byte) (n >>> 24);
            return ByteBuffer.wrap(buf, 0, len);
        }
    }

    static ByteBuffer payload(byte[] frame) {
        return ByteBuffer.wrap(frame, 5, frame.length - 5).slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    static long u32(ByteBuffer b) {
        return b.getInt() & 0xFFFFFFFFL;
    }

    static String str(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new java.nio.BufferUnderflowException();
        }
        String s = new String(b.array(), b.arrayOffset() + b.position(), n, StandardCharsets.UTF_8);
        b.position(b.position() + n);
        return s;
    }

    static byte[] rest(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    static FileStat stat(ByteBuffer b) {
        int type = b.get() & 0xFF;
        int mode = b.getInt();
        int uid = b.getInt();
        int gid = b.getInt();
        long size = b.getLong();
        long sec = b.getLong();
        int nsec = b.getInt();
        String name = str(b);
        return new FileStat(name, type < TYPES.length ? TYPES[type] : FileType.UNKNOWN, mode & 07777, uid, gid, size,
            Instant.ofEpochSecond(sec, nsec));
    }

    static String typeName(int type) {
        switch (type) {
            case T_HELLO: return "HELLO";
            case T_PING: return "PING";
            case T_EXEC: return "EXEC";
            case T_SIGNAL: return "SIGNAL";
            case T_READ: return "READ";
            case T_WRITE: return "WRITE";
            case T_STAT: return "STAT";
            case T_LIST: return "LIST";
            case T_MKDIR: return "MKDIR";
            case T_REMOVE: return "REMOVE";
            default: return String.format("0x%02x", type);
        }
    }
}
