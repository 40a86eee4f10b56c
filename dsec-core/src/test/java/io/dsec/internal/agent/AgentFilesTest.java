package io.dsec.internal.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.dsec.FileStat;
import io.dsec.FileType;
import io.dsec.NoSuchSandboxFileException;
import io.dsec.SandboxFileException;
import io.dsec.SandboxFileExistsException;
import io.dsec.WriteOptions;
import io.dsec.testing.Capabilities;

class AgentFilesTest {
    private static AgentIo io;
    private AgentProcess agent;
    private AgentConnection conn;
    private AgentFiles files;
    private String root;

    @BeforeAll
    static void startIo() {
        io = new AgentIo();
    }

    @AfterAll
    static void stopIo() {
        io.close();
    }

    @BeforeEach
    void startAgent() throws Exception {
        agent = AgentProcess.start();
        conn = agent.connect(io);
        files = new AgentFiles(conn);
        Path r = agent.dir.resolve("root");
        Files.createDirectories(r);
        root = r.toString();
    }

    @AfterEach
    void stopAgent() {
        conn.close();
        agent.close();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void writeReadRoundTripAcrossChunks() throws Exception {
        byte[] data = random(3 * (1 << 20) + 12345, 7);
        String path = root + "/a/b/big.bin";
        files.write(path, data);
        assertThat(Files.readAllBytes(Path.of(path))).isEqualTo(data);
        assertThat(files.read(path)).isEqualTo(data);
        files.write(path, new byte[] {1, 2, 3});
        assertThat(files.read(path)).containsExactly(1, 2, 3);
        files.write(path, new byte[0]);
        assertThat(files.read(path)).isEmpty();
        byte[] exact = random(1 << 20, 8);
        files.write(path, exact);
        assertThat(files.read(path)).isEqualTo(exact);
        files.writeString(root + "/s.txt", "héllo");
        assertThat(files.readString(root + "/s.txt")).isEqualTo("héllo");
    }

    @Test
    void newFilesGetTheModeExactly() throws Exception {
        files.write(root + "/x.sh", "echo".getBytes(), WriteOptions.mode(0777));
        assertThat(files.stat(root + "/x.sh").mode()).isEqualTo(0777);
        files.write(root + "/y", "y".getBytes(), WriteOptions.mode(0600));
        FileStat st = files.stat(root + "/y");
        assertThat(st.mode()).isEqualTo(0600);
        assertThat(st.type()).isEqualTo(FileType.FILE);
        assertThat(st.size()).isEqualTo(1);
        assertThat(st.name()).isEqualTo("y");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(Path.of(root, "y")))).isEqualTo("rw-------");
        // An existing file keeps its mode.
        files.write(root + "/y", "yy".getBytes(), WriteOptions.mode(0644));
        assertThat(files.stat(root + "/y").mode()).isEqualTo(0600);
    }

    @Test
    void ownerIsSet() throws Exception {
        Capabilities.requireRoot();
        files.write(root + "/owned", "x".getBytes(), WriteOptions.mode(0640).owner(1234, 5678));
        FileStat st = files.stat(root + "/owned");
        assertThat(st.uid()).isEqualTo(1234);
        assertThat(st.gid()).isEqualTo(5678);
        assertThat(st.mode()).isEqualTo(0640);
    }

    @Test
    void listStatAndLstatOnASymlink() throws Exception {
        files.writeString(root + "/d/b", "bb");
        files.writeString(root + "/d/a", "a");
        files.mkdirs(root + "/d/c");
        Files.createSymbolicLink(Path.of(root, "d", "link"), Path.of("a"));
        List<FileStat> entries = files.list(root + "/d");
        assertThat(entries.stream().map(FileStat::name).collect(Collectors.toList())).containsExactly("a", "b", "c", "link");
        assertThat(entries.get(0).type()).isEqualTo(FileType.FILE);
        assertThat(entries.get(1).size()).isEqualTo(2);
        assertThat(entries.get(2).isDirectory()).isTrue();
        assertThat(entries.get(3).type()).isEqualTo(FileType.SYMLINK);
        assertThat(entries.get(0).modified()).isEqualTo(Files.getLastModifiedTime(Path.of(root, "d", "a")).toInstant());

        assertThat(files.stat(root + "/d/link").type()).isEqualTo(FileType.FILE);
        assertThat(files.stat(root + "/d/link").size()).isEqualTo(1);
        assertThat(files.lstat(root + "/d/link").type()).isEqualTo(FileType.SYMLINK);
        assertThat(files.lstat(root + "/d/link").name()).isEqualTo("link");
        assertThat(files.stat("/").name()).isEqualTo("/");
        assertThat(files.list(root + "/d/c")).isEmpty();
        assertThat(files.exists(root + "/d/link")).isTrue();
        assertThat(files.exists(root + "/d/nope")).isFalse();
    }

    @Test
    void bigDirectoryListsWhole() {
        files.mkdirs(root + "/many");
        for (int i = 0; i < 3000; i++) {
            files.write(root + "/many/" + String.format("f%05d-%s", i, "x".repeat(200)), new byte[0]);
        }
        List<FileStat> entries = files.list(root + "/many");
        assertThat(entries).hasSize(3000);
        assertThat(entries.get(2999).name()).startsWith("f02999-");
    }

    @Test
    void mkdirsAndRemove() throws Exception {
        files.mkdirs(root + "/m/n/o", 0750);
        FileStat st = files.stat(root + "/m/n/o");
        assertThat(st.isDirectory()).isTrue();
        assertThat(st.mode()).isEqualTo(0750);
        files.mkdirs(root + "/m/n/o");
        files.writeString(root + "/m/n/o/f", "f");
        assertThatThrownBy(() -> files.mkdirs(root + "/m/n/o/f")).isInstanceOf(SandboxFileExistsException.class);
        assertThatThrownBy(() -> files.remove(root + "/m/n")).isInstanceOf(SandboxFileException.class)
            .satisfies(e -> assertThat(((SandboxFileException) e).errno()).isEqualTo(SandboxFileException.ENOTEMPTY));
        files.remove(root + "/m/n/o/f");
        files.remove(root + "/m/n/o");
        assertThat(files.exists(root + "/m/n/o")).isFalse();
        assertThat(files.exists(root + "/m/n")).isTrue();
    }

    @Test
    void removeRecursivelyDoesNotFollowSymlinks() throws Exception {
        files.writeString(root + "/outside/keep", "keep");
        files.writeString(root + "/tree/a/b/c/file", "x");
        files.mkdirs(root + "/tree/empty");
        Files.createSymbolicLink(Path.of(root, "tree", "a", "out"), Path.of(root, "outside"));
        Files.createSymbolicLink(Path.of(root, "tree", "top"), Path.of(root, "outside"));
        files.removeRecursively(root + "/tree");
        assertThat(Files.exists(Path.of(root, "tree"))).isFalse();
        assertThat(files.readString(root + "/outside/keep")).isEqualTo("keep");
        files.removeRecursively(root + "/tree");
        files.removeRecursively(root + "/outside/keep");
        assertThat(files.exists(root + "/outside/keep")).isFalse();
        // A symlink to a directory: the link goes, the directory stays.
        Files.createSymbolicLink(Path.of(root, "ln"), Path.of(root, "outside"));
        files.removeRecursively(root + "/ln");
        assertThat(Files.isDirectory(Path.of(root, "outside"))).isTrue();
    }

    @Test
    void errorsMapToExceptions() {
        assertThatThrownBy(() -> files.read(root + "/missing")).isInstanceOf(NoSuchSandboxFileException.class)
            .hasMessageContaining("read " + root + "/missing").hasMessageContaining("errno 2");
        assertThatThrownBy(() -> files.stat(root + "/missing")).isInstanceOf(NoSuchSandboxFileException.class);
        assertThatThrownBy(() -> files.list(root + "/missing")).isInstanceOf(NoSuchSandboxFileException.class);
        assertThatThrownBy(() -> files.remove(root + "/missing")).isInstanceOf(NoSuchSandboxFileException.class);
        assertThatThrownBy(() -> files.write(root + "/no/parent", new byte[1], WriteOptions.DEFAULT.createParents(false)))
            .isInstanceOf(NoSuchSandboxFileException.class);
        assertThatThrownBy(() -> files.read(root)).isInstanceOf(SandboxFileException.class)
            .satisfies(e -> assertThat(((SandboxFileException) e).errno()).isEqualTo(SandboxFileException.EISDIR));
        files.writeString(root + "/plain", "p");
        assertThatThrownBy(() -> files.list(root + "/plain")).isInstanceOf(SandboxFileException.class)
            .satisfies(e -> assertThat(((SandboxFileException) e).errno()).isEqualTo(SandboxFileException.ENOTDIR));
        assertThatThrownBy(() -> files.writeString(root + "/plain/under", "x")).isInstanceOf(SandboxFileException.class)
            .satisfies(e -> assertThat(((SandboxFileException) e).errno()).isEqualTo(SandboxFileException.ENOTDIR));
    }

    @Test
    void streams() throws Exception {
        byte[] data = random((5 << 19) + 3, 9);
        try (OutputStream out = files.openWrite(root + "/s/stream.bin", WriteOptions.mode(0600))) {
            int off = 0;
            int step = 1;
            while (off < data.length) {
                int n = Math.min(step, data.length - off);
                out.write(data, off, n);
                off += n;
                step = step * 3 + 1;
            }
            out.write(7);
        }
        byte[] expected = java.util.Arrays.copyOf(data, data.length + 1);
        expected[data.length] = 7;
        assertThat(Files.readAllBytes(Path.of(root, "s", "stream.bin"))).isEqualTo(expected);
        assertThat(files.stat(root + "/s/stream.bin").mode()).isEqualTo(0600);
        try (InputStream in = files.openRead(root + "/s/stream.bin")) {
            assertThat(in.read()).isEqualTo(expected[0] & 0xFF);
            byte[] rest = in.readAllBytes();
            assertThat(rest).isEqualTo(java.util.Arrays.copyOfRange(expected, 1, expected.length));
            assertThat(in.read()).isEqualTo(-1);
        }
        try (OutputStream out = files.openWrite(root + "/s/empty", WriteOptions.DEFAULT)) {
            // nothing
        }
        assertThat(files.read(root + "/s/empty")).isEmpty();
        assertThatThrownBy(() -> files.openRead(root + "/s/missing").read()).isInstanceOf(NoSuchSandboxFileException.class);
    }
}
