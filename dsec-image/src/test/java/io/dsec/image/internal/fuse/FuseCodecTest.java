package io.dsec.image.internal.fuse;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FuseCodecTest {
    @TempDir
    Path tmp;

    private static ByteBuffer buffer(int size) {
        return ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
    }

    /** A request: header (40 bytes) then {@code body} ints/longs written by the caller. */
    private static ByteBuffer request(int opcode, long unique, long nodeid, int bodyLength) {
        ByteBuffer in = buffer(FuseCodec.IN_HEADER + bodyLength + 64);
        in.putInt(0, FuseCodec.IN_HEADER + bodyLength);
        in.putInt(4, opcode);
        in.putLong(8, unique);
        in.putLong(16, nodeid);
        return in;
    }

    @Test
    void negotiatesOnlyWhatTheKernelOffers() {
        long kernel = FuseCodec.ASYNC_READ | FuseCodec.BIG_WRITES | FuseCodec.MAX_PAGES | FuseCodec.PARALLEL_DIROPS
            | FuseCodec.INIT_EXT | FuseCodec.HAS_RESEND | (1L << 3) | (1L << 37);
        FuseCodec.Init init = FuseCodec.negotiate(7, 44, 128 << 10, kernel, 1 << 20, 256);
        assertThat(init.minor()).isEqualTo(40);
        assertThat(init.flags()).isEqualTo(FuseCodec.WANTED_FLAGS);
        assertThat(init.maxReadahead()).isEqualTo(128 << 10);
        assertThat(init.maxPages()).isEqualTo(256);

        FuseCodec.Init old = FuseCodec.negotiate(7, 31, 1 << 20, FuseCodec.ASYNC_READ | FuseCodec.HAS_RESEND, 1 << 20, 256);
        assertThat(old.minor()).isEqualTo(31);
        assertThat(old.flags()).as("no INIT_EXT: no flags2").isEqualTo(FuseCodec.ASYNC_READ);
        assertThat(old.maxPages()).isZero();
    }

    @Test
    void initReplyCarriesFlags2AndMaxPages() {
        ByteBuffer in = request(FuseCodec.INIT, 2, 0, 64);
        in.putInt(40, 7);
        in.putInt(44, 44);
        in.putInt(48, 128 << 10);
        in.putInt(52, (int) (FuseCodec.ASYNC_READ | FuseCodec.MAX_PAGES | FuseCodec.INIT_EXT | FuseCodec.BIG_WRITES));
        in.putInt(56, (int) (FuseCodec.HAS_RESEND >>> 32));
        FuseFilesystem fs = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        ByteBuffer out = buffer(4096);
        int len = fs.handle(in, FuseCodec.IN_HEADER + 64, out, out.slice(16, 4000));
        assertThat(len).isEqualTo(16 + 64);
        assertThat(out.getInt(0)).isEqualTo(len);
        assertThat(out.getInt(4)).isZero();
        assertThat(out.getLong(8)).isEqualTo(2);
        assertThat(out.getInt(16)).isEqualTo(7);
        assertThat(out.getInt(20)).isEqualTo(40);
        assertThat(out.getInt(24)).isEqualTo(128 << 10);
        int flags = out.getInt(28);
        assertThat(flags & (int) FuseCodec.INIT_EXT).isNotZero();
        assertThat(flags & (int) FuseCodec.MAX_PAGES).isNotZero();
        assertThat(flags & (int) FuseCodec.PARALLEL_DIROPS).as("not offered").isZero();
        assertThat(out.getShort(16 + 28)).isEqualTo((short) 256);
        assertThat(out.getInt(16 + 32)).isEqualTo((int) (FuseCodec.HAS_RESEND >>> 32));
        assertThat(fs.init().has(FuseCodec.HAS_RESEND)).isTrue();
        assertThat(new FuseState(tmp).loadInit()).as("persisted").isEqualTo(fs.init());
    }

    @Test
    void lookupGetattrOpenReadAndErrors() {
        FuseFilesystem fs = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        fs.add("x.img", TestFuseFiles.pattern(10_000));
        ByteBuffer out = buffer(1 << 16);
        ByteBuffer data = out.slice(16, (1 << 16) - 16);

        ByteBuffer lookup = request(FuseCodec.LOOKUP, 4, FuseCodec.ROOT_ID, 6);
        lookup.put(40, "x.img".getBytes()).put(45, (byte) 0);
        assertThat(fs.handle(lookup, 46, out, data)).isEqualTo(16 + FuseCodec.ENTRY_OUT);
        long ino = out.getLong(16);
        assertThat(ino).isEqualTo(2);
        assertThat(out.getLong(16 + 24)).as("attr_valid").isEqualTo(FuseFilesystem.VALID_SECONDS);
        assertThat(out.getLong(16 + 40 + 8)).as("size").isEqualTo(10_000);
        assertThat(out.getInt(16 + 40 + 60)).as("mode").isEqualTo(0100444);

        ByteBuffer missing = request(FuseCodec.LOOKUP, 6, FuseCodec.ROOT_ID, 4);
        missing.put(40, "nop".getBytes()).put(43, (byte) 0);
        assertThat(fs.handle(missing, 44, out, data)).isEqualTo(16);
        assertThat(out.getInt(4)).isEqualTo(-FuseNative.ENOENT);

        ByteBuffer open = request(FuseCodec.OPEN, 8, ino, 8);
        open.putInt(40, FuseNative.O_RDWR);
        fs.handle(open, 48, out, data);
        assertThat(out.getInt(4)).isEqualTo(-FuseNative.EROFS);
        open.putInt(40, FuseNative.O_RDONLY);
        assertThat(fs.handle(open, 48, out, data)).isEqualTo(16 + FuseCodec.OPEN_OUT);
        assertThat(out.getLong(16)).as("fh is the inode").isEqualTo(ino);
        assertThat(out.getInt(24) & FuseCodec.FOPEN_KEEP_CACHE).isNotZero();

        ByteBuffer read = request(FuseCodec.READ, 10 | FuseCodec.UNIQUE_RESEND, ino, 40);
        read.putLong(40, ino);
        read.putLong(48, 9_990);
        read.putInt(56, 4096);
        assertThat(fs.handle(read, 80, out, data)).as("short at EOF").isEqualTo(16 + 10);
        assertThat(out.getLong(8)).as("resend bit echoed").isEqualTo(10 | FuseCodec.UNIQUE_RESEND);
        for (int i = 0; i < 10; i++) {
            assertThat(out.get(16 + i)).isEqualTo(TestFuseFiles.patternByte(9_990 + i));
        }
        read.putLong(48, 10_000);
        assertThat(fs.handle(read, 80, out, data)).as("nothing at EOF").isEqualTo(16);
        assertThat(out.getInt(4)).isZero();

        ByteBuffer unknown = request(99, 12, ino, 0);
        assertThat(fs.handle(unknown, 40, out, data)).isEqualTo(16);
        assertThat(out.getInt(4)).isEqualTo(-FuseNative.ENOSYS);
        assertThat(fs.handle(request(FuseCodec.FORGET, 14, ino, 8), 48, out, data)).as("no reply").isZero();
    }

    @Test
    void readFailuresBecomeTheirErrno() {
        FuseFilesystem fs = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        fs.add("bad", TestFuseFiles.failing(new byte[100], 0, 110));
        ByteBuffer out = buffer(1 << 16);
        ByteBuffer read = request(FuseCodec.READ, 2, 2, 40);
        read.putLong(40, 2);
        read.putInt(56, 100);
        assertThat(fs.handle(read, 80, out, out.slice(16, 1000))).isEqualTo(16);
        assertThat(out.getInt(4)).isEqualTo(-110);
        assertThat(fs.errors.sum()).isEqualTo(1);
    }

    @Test
    void readdirPagesThroughEntriesWithAlignedDirents() {
        FuseFilesystem fs = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        for (String name : new String[] {"c", "a.img", "bb"}) {
            fs.add(name, TestFuseFiles.bytes(new byte[1]));
        }
        ByteBuffer out = buffer(4096);
        ByteBuffer opendir = request(FuseCodec.OPENDIR, 2, FuseCodec.ROOT_ID, 8);
        fs.handle(opendir, 48, out, out);
        long fh = out.getLong(16);

        StringBuilder names = new StringBuilder();
        long offset = 0;
        while (true) {
            ByteBuffer readdir = request(FuseCodec.READDIR, 4, FuseCodec.ROOT_ID, 40);
            readdir.putLong(40, fh);
            readdir.putLong(48, offset);
            readdir.putInt(56, 64); // room for two short entries at a time
            int len = fs.handle(readdir, 80, out, out);
            if (len == 16) {
                break;
            }
            for (int at = 16; at < len; ) {
                int nameLength = out.getInt(at + 16);
                byte[] name = new byte[nameLength];
                out.get(at + 24, name);
                names.append(new String(name)).append(' ');
                offset = out.getLong(at + 8);
                at += FuseCodec.direntSize(nameLength);
                assertThat(at % 8).isZero();
            }
        }
        assertThat(names.toString().trim()).isEqualTo(". .. a.img bb c");
    }

    @Test
    void inodesSurviveARestartAndARemovedNameGetsANewOne() {
        FuseFilesystem first = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        first.add("a", TestFuseFiles.bytes(new byte[1]));
        first.add("b", TestFuseFiles.bytes(new byte[1]));
        FuseFilesystem second = new FuseFilesystem(new FuseState(tmp), 1 << 20, 256);
        second.add("b", TestFuseFiles.bytes(new byte[1]));
        second.add("a", TestFuseFiles.bytes(new byte[1]));
        assertThat(inode(second, "a")).isEqualTo(2);
        assertThat(inode(second, "b")).isEqualTo(3);
        second.remove("a");
        second.add("a", TestFuseFiles.gated(1, 0, 0, new CountDownLatch(0), () -> { }));
        assertThat(inode(second, "a")).isEqualTo(4);
    }

    @Test
    void notificationsAreEncoded() {
        ByteBuffer out = buffer(256);
        assertThat(FuseCodec.putNotify(out, FuseCodec.NOTIFY_RESEND)).isEqualTo(16);
        assertThat(out.getInt(0)).isEqualTo(16);
        assertThat(out.getInt(4)).isEqualTo(7);
        assertThat(out.getLong(8)).isZero();
        int len = FuseCodec.putInvalEntry(out, 1, "abc");
        assertThat(len).isEqualTo(16 + 16 + 4);
        assertThat(out.getInt(4)).isEqualTo(3);
        assertThat(out.getLong(16)).isEqualTo(1);
        assertThat(out.getInt(24)).isEqualTo(3);
        assertThat(out.get(32 + 3)).isZero();
    }

    private static long inode(FuseFilesystem fs, String name) {
        ByteBuffer out = buffer(4096);
        ByteBuffer lookup = request(FuseCodec.LOOKUP, 2, FuseCodec.ROOT_ID, name.length() + 1);
        lookup.put(40, name.getBytes()).put(40 + name.length(), (byte) 0);
        fs.handle(lookup, 40 + name.length() + 1, out, out);
        assertThat(out.getInt(4)).isZero();
        return out.getLong(16);
    }
}
