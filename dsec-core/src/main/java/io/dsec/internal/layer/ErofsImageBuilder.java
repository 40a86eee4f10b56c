package io.dsec.internal.layer;

import io.dsec.internal.fs.FileTrees;
import io.dsec.InvalidSpecException;
import io.dsec.LayerBuildException;
import io.dsec.MissingPrerequisiteException;
import io.dsec.spi.LayerStore.BuiltImage;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * Builds EROFS images with {@code mkfs.erofs}: uncompressed and deterministic, so that the same tree gives the same
 * bytes and so the same digest.
 *
 * <p>Determinism (checked with erofs-utils 1.5): {@code -T0} gives every inode the same timestamp, so mtimes of the
 * source do not leak in; a fixed {@code -U} uuid replaces the random one; mkfs.erofs sorts the entries of each directory
 * by name before it lays them out, so the order in which files were created (readdir order) does not matter. Owners,
 * modes, symlinks, hardlinks and xattrs are kept as they are in the tree: base images need their real owners, so
 * {@code --all-root} is not used.
 *
 * <p>The image is padded with zeros to a multiple of {@link #ALIGNMENT} so the same file can back a virtio-pmem device;
 * the sha256 is computed in the one pass that reads the image and writes the padding.
 */
public final class ErofsImageBuilder {
    /** Images are padded to a multiple of 2 MiB. */
    public static final long ALIGNMENT = 2L << 20;
    /** The uuid of every image: a random one would make the bytes differ. */
    public static final String FIXED_UUID = "d5ec0000-0000-4000-8000-000000000001";
    /** The build time written into every image: 2100-01-01, later than any file's mtime, so no mtime is clamped. */
    static final String SOURCE_DATE_EPOCH = "4102444800";
    private static final List<String> SEARCH_PATH = List.of("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin");
    private static final String INSTALL_HINT = "mkfs.erofs not found: apt-get install erofs-utils";

    private final Path mkfs;

    /** Uses {@code mkfs.erofs} from PATH (or the usual sbin directories); its absence is reported when building. */
    public ErofsImageBuilder() {
        this(findOnPath("mkfs.erofs"));
    }

    /** Uses the given {@code mkfs.erofs}; when it does not exist, builds fail with a {@link MissingPrerequisiteException}. */
    public ErofsImageBuilder(Path mkfsErofs) {
        this.mkfs = mkfsErofs;
    }

    /** The mkfs.erofs this builder runs, or null when none was found. */
    public Path mkfsPath() {
        return mkfs;
    }

    /**
     * Builds an image of {@code directory} into a new temporary file in {@code stagingDir}. The caller hands the file to
     * a {@link io.dsec.spi.LayerStore} (which renames it into place) or deletes it.
     */
    public BuiltImage fromDirectory(Path directory, Path stagingDir) {
        return build(directory, stagingDir, false);
    }

    /**
     * Builds a snapshot diff image of {@code directory}: as {@link #fromDirectory}, and files are stored in 4 KiB chunks
     * so that the holes of sparse files stay holes (mkfs.erofs 1.5 stores null chunks for them). Xattrs
     * ({@code trusted.overlay.*} too), character-device whiteouts, fifos, owners, modes, mtimes and hardlinks are kept
     * as they are (checked with erofs-utils 1.5).
     */
    public BuiltImage diffFromDirectory(Path directory, Path stagingDir) {
        return build(directory, stagingDir, true);
    }

    private BuiltImage build(Path directory, Path stagingDir, boolean chunked) {
        if (directory == null || !Files.isDirectory(directory)) {
            throw new InvalidSpecException("directory", directory,
                directory != null && Files.exists(directory) ? "not a directory: give the root of the tree to build the layer from"
                    : "does not exist: give an existing directory, the root of the tree to build the layer from");
        }
        checkMkfs();
        Path root;
        try {
            root = directory.toRealPath(); // a symlink to the tree builds the tree, not the link
        } catch (IOException e) {
            throw new InvalidSpecException("directory", directory, "cannot be resolved (" + e.getMessage() + ")");
        }
        Path image = createTemp(stagingDir, ".erofs.tmp");
        boolean ok = false;
        try {
            runMkfs(image, root, chunked);
            BuiltImage built = padAndDigest(image);
            ok = true;
            return built;
        } finally {
            if (!ok) {
                deleteQuietly(image);
            }
        }
    }

    /**
     * Builds an image of the tree in a plain (uncompressed) tar stream. The stream is extracted with GNU tar into a
     * scratch directory in {@code stagingDir}, keeping numeric owners and modes, and the directory is built. The stream
     * is read to its end and not closed.
     */
    public BuiltImage fromTar(InputStream tar, Path stagingDir) {
        Objects.requireNonNull(tar, "tar");
        checkMkfs();
        Path tree = createTempDir(stagingDir);
        try {
            extractTar(tar, tree);
            return fromDirectory(tree, stagingDir);
        } finally {
            deleteTree(tree);
        }
    }

    private void checkMkfs() {
        if (mkfs == null || !Files.isRegularFile(mkfs) || !Files.isExecutable(mkfs)) {
            throw new MissingPrerequisiteException(INSTALL_HINT + (mkfs == null ? "" : " (looked for " + mkfs + ")"));
        }
    }

    private void runMkfs(Path image, Path directory, boolean chunked) {
        // Reproducible without erasing mtimes: SOURCE_DATE_EPOCH fixes the image's own build time and only clamps file
        // times later than it. (-T would set every file's mtime, and then Python finds every .pyc stale against its .py
        // and every sandbox recompiles them into its upper.) The same tree, mtimes included, gives the same bytes.
        List<String> command = chunked
            ? List.of(mkfs.toString(), "--quiet", "--chunksize=4096", "-U" + FIXED_UUID, image.toString(), directory.toString())
            : List.of(mkfs.toString(), "--quiet", "-U" + FIXED_UUID, image.toString(), directory.toString());
        Result result = run(command, null, image.getParent(), java.util.Map.of("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH));
        if (result.exitCode != 0) {
            throw new LayerBuildException("mkfs.erofs failed (exit " + result.exitCode + ") building " + directory + ": "
                + result.stderr.strip());
        }
    }

    private static void extractTar(InputStream tar, Path tree) {
        Path tarTool = findOnPath("tar");
        if (tarTool == null) {
            throw new MissingPrerequisiteException("tar not found: apt-get install tar");
        }
        List<String> command = List.of(tarTool.toString(), "-x", "-p", "--numeric-owner", "--same-owner", "-f", "-", "-C", tree.toString());
        Result result = run(command, tar, tree.getParent());
        if (result.exitCode != 0) {
            throw new LayerBuildException("tar could not extract the layer's tar stream (exit " + result.exitCode
                + "); give a plain, uncompressed tar: " + result.stderr.strip());
        }
    }

    private record Result(int exitCode, String stderr) {
    }

    /** Runs a command, feeding {@code stdin} (to its end, without closing it) and keeping stderr in a scratch file. */
    private static Result run(List<String> command, InputStream stdin, Path scratchDir) {
        return run(command, stdin, scratchDir, java.util.Map.of());
    }

    private static Result run(List<String> command, InputStream stdin, Path scratchDir, java.util.Map<String, String> env) {
        Path stderrFile = createTemp(scratchDir, ".stderr");
        try {
            ProcessBuilder pb = new ProcessBuilder(command)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(stderrFile.toFile());
            pb.environment().putAll(env);
            if (stdin == null) {
                pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            }
            Process process = pb.start();
            try {
                if (stdin != null) {
                    try (OutputStream out = process.getOutputStream()) {
                        stdin.transferTo(out);
                    } catch (IOException e) {
                        // The tool stopped reading (broken pipe). When it failed, its exit code and stderr say why;
                        // when it succeeded (tar stops at the end-of-archive blocks), read the rest of the stream as
                        // promised.
                        if (process.waitFor() == 0) {
                            stdin.transferTo(OutputStream.nullOutputStream());
                        }
                    }
                }
                int exit = process.waitFor();
                return new Result(exit, Files.readString(stderrFile, StandardCharsets.UTF_8));
            } finally {
                if (process.isAlive()) {
                    process.destroyForcibly();
                    process.waitFor();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LayerBuildException("interrupted while running " + command.get(0), e);
        } catch (IOException e) {
            throw new LayerBuildException("could not run " + String.join(" ", command) + ": " + e.getMessage(), e);
        } finally {
            deleteQuietly(stderrFile);
        }
    }

    /** Reads the image once for its digest, appends zeros up to the alignment (hashing them too), and syncs the file. */
    private static BuiltImage padAndDigest(Path image) {
        MessageDigest sha256;
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
            long size = 0;
            while (true) {
                buffer.clear();
                int n = channel.read(buffer, size);
                if (n < 0) {
                    break;
                }
                buffer.flip();
                sha256.update(buffer);
                size += n;
            }
            if (size == 0) {
                throw new LayerBuildException("mkfs.erofs wrote an empty image at " + image);
            }
            long padded = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
            long position = size;
            ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
            byte[] zeroArray = new byte[1 << 20];
            while (position < padded) {
                int n = (int) Math.min(zeroArray.length, padded - position);
                sha256.update(zeroArray, 0, n);
                zeros.clear().limit(n);
                while (zeros.hasRemaining()) {
                    position += channel.write(zeros, position);
                }
            }
            channel.force(true);
            Files.setPosixFilePermissions(image, PosixFilePermissions.fromString("r--r--r--"));
            return new BuiltImage(image, "sha256:" + HexFormat.of().formatHex(sha256.digest()), padded);
        } catch (InterruptedIOException e) {
            Thread.currentThread().interrupt();
            throw new LayerBuildException("interrupted while writing " + image, e);
        } catch (IOException e) {
            throw new LayerBuildException("could not read or pad the image " + image + ": " + e.getMessage(), e);
        }
    }

    static Path findOnPath(String tool) {
        List<String> dirs = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(File.pathSeparator)));
        }
        dirs.addAll(SEARCH_PATH);
        for (String dir : dirs) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, tool);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private static Path createTemp(Path dir, String suffix) {
        try {
            Files.createDirectories(dir);
            return Files.createTempFile(dir, "build-", suffix);
        } catch (IOException e) {
            throw new LayerBuildException("could not create a scratch file in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** A scratch directory, 0755: a tar without a {@code ./} entry leaves the root of the layer as this. */
    private static Path createTempDir(Path dir) {
        try {
            Files.createDirectories(dir);
            Path tree = Files.createTempDirectory(dir, "tree-");
            Files.setPosixFilePermissions(tree, PosixFilePermissions.fromString("rwxr-xr-x"));
            return tree;
        } catch (IOException e) {
            throw new LayerBuildException("could not create a scratch directory in " + dir + ": " + e.getMessage(), e);
        }
    }

    static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // a scratch file; nothing more to do
        }
    }

    /** Deletes a scratch tree without following symlinks (an extracted tar may hold links to anywhere). */
    static void deleteTree(Path root) {
        try {
            FileTrees.deleteTree(root);
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete the scratch tree " + root, e);
        }
    }
}
