package io.dsec.internal.layer;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.dsec.DsecException;
import io.dsec.InvalidSpecException;
import io.dsec.Layer;
import io.dsec.LayerBuildException;
import io.dsec.LayerKind;
import io.dsec.spi.LayerStore;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LayerStore} in a local directory, {@code <stateDir>/layers/}:
 *
 * <pre>
 * blobs/sha256/&lt;hex&gt;.erofs          the image, read-only, stored once per digest
 * blobs/sha256/&lt;hex&gt;.json           the layer the digest was last put as (for get(digest))
 * refs/&lt;kind&gt;/&lt;name&gt;/&lt;version&gt;.json  the layer a reference points to (the one put last)
 * tmp/                               builds in progress; renamed into blobs/ when done
 * </pre>
 *
 * Every file is written to a unique temporary name and renamed into place, so concurrent puts (also of the same
 * content, also from several processes) and crashes never leave a half-written blob or record. Everything is read from
 * disk, so a new store on the same directory sees what earlier ones stored.
 */
public final class LocalLayerStore implements LayerStore {
    private static final Logger LOG = LoggerFactory.getLogger(LocalLayerStore.class);
    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");
    private static final ObjectMapper JSON = new ObjectMapper()
        .enable(SerializationFeature.INDENT_OUTPUT)
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path root;
    private final Path blobs;
    private final Path refs;
    private final Path tmp;

    /** The JSON of a blob or reference record. */
    record LayerRecord(String kind, String name, String version, String digest, long sizeBytes, String storedAt) {
        static LayerRecord of(Layer layer) {
            return new LayerRecord(layer.kind().name(), layer.name(), layer.version(), layer.digest(), layer.sizeBytes(),
                Instant.now().toString());
        }

        Layer toLayer() {
            return new Layer(LayerKind.valueOf(kind), name, version, digest, sizeBytes);
        }
    }

    /** A store under {@code <stateDir>/layers/}, created when missing. */
    public LocalLayerStore(Path stateDir) {
        this.root = stateDir.toAbsolutePath().normalize().resolve("layers");
        this.blobs = root.resolve("blobs").resolve("sha256");
        this.refs = root.resolve("refs");
        this.tmp = root.resolve("tmp");
        try {
            Files.createDirectories(blobs);
            Files.createDirectories(refs);
            Files.createDirectories(tmp);
        } catch (IOException e) {
            throw new LayerBuildException("could not create the layer store at " + root + ": " + e.getMessage()
                + "; check that the state directory is writable", e);
        }
    }

    /** {@code <stateDir>/layers}. */
    public Path root() {
        return root;
    }

    @Override
    public Path stagingDirectory() {
        return tmp;
    }

    @Override
    public Layer put(LayerKind kind, String name, String version, BuiltImage image) {
        checkDigest(image.digest());
        Layer layer = new Layer(kind, name, version, image.digest(), image.sizeBytes());
        Path blob = blobPath(image.digest());
        try {
            // The blob's record first: get(digest) answers only once the blob exists, and then finds its record.
            writeJson(blobRecordPath(image.digest()), LayerRecord.of(layer));
            if (Files.exists(blob)) {
                // Identical bytes are stored once: the new file is not needed.
                Files.deleteIfExists(image.file());
            } else {
                long size = Files.size(image.file());
                if (size != image.sizeBytes()) {
                    throw new LayerBuildException("the image " + image.file() + " has " + size + " bytes, not the "
                        + image.sizeBytes() + " its builder reported");
                }
                // rename(2) replaces atomically: when another thread or process stored the same bytes meanwhile, the
                // blob is replaced by identical bytes and readers (mounts) keep the inode they opened.
                move(image.file(), blob);
            }
            writeJson(refPath(kind, name, version), LayerRecord.of(layer));
        } catch (IOException e) {
            ErofsImageBuilder.deleteQuietly(image.file());
            throw new LayerBuildException("could not store layer " + layer.reference() + " (" + layer.digest() + ") in "
                + root + ": " + e.getMessage(), e);
        }
        return layer;
    }

    @Override
    public boolean contains(String digest) {
        return DIGEST.matcher(String.valueOf(digest)).matches() && Files.isRegularFile(blobPath(digest));
    }

    @Override
    public Optional<Layer> get(String digest) {
        checkDigest(digest);
        if (!Files.isRegularFile(blobPath(digest))) {
            return Optional.empty();
        }
        return readJson(blobRecordPath(digest));
    }

    @Override
    public Optional<Layer> find(LayerKind kind, String name, String version) {
        Layer.parseReference(name + ":" + version);
        return readJson(refPath(kind, name, version)).filter(layer -> contains(layer.digest()));
    }

    @Override
    public List<Layer> list() {
        List<Layer> layers = new ArrayList<>();
        try (Stream<Path> files = Files.walk(refs, 3)) {
            files.filter(p -> p.getFileName().toString().endsWith(".json") && Files.isRegularFile(p))
                .forEach(p -> readJson(p).filter(layer -> contains(layer.digest())).ifPresent(layers::add));
        } catch (IOException e) {
            throw new LayerBuildException("could not list the layers in " + refs + ": " + e.getMessage(), e);
        }
        layers.sort(Comparator.comparing(Layer::kind).thenComparing(Layer::name).thenComparing(Layer::version));
        return layers;
    }

    @Override
    public Path mountSource(Layer layer) {
        Path blob = blobPath(layer.digest());
        if (!Files.isRegularFile(blob)) {
            throw new DsecException("layer " + layer.reference() + " (" + layer.digest() + ") is not in the layer store at "
                + root + ": build it on this host with host.layers().fromDirectory(...) or fromTar(...)");
        }
        return blob;
    }

    @Override
    public void deleteReference(LayerKind kind, String name, String version) {
        Layer.parseReference(name + ":" + version);
        try {
            Files.deleteIfExists(refPath(kind, name, version));
        } catch (IOException e) {
            throw new DsecException("could not delete the reference " + kind + " " + name + ":" + version + " in " + root + ": "
                + e.getMessage(), e);
        }
    }

    /** Documents are files under the store's root named by their key ({@code snapshots/<id>.json}). */
    @Override
    public void putDocument(String key, byte[] content) {
        Path target = root.resolve(LayerStore.checkDocumentKey(key));
        try {
            Files.createDirectories(target.getParent());
            Path temp = Files.createTempFile(tmp, "document-", ".tmp");
            try {
                try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                    java.nio.ByteBuffer buffer = java.nio.ByteBuffer.wrap(content);
                    while (buffer.hasRemaining()) {
                        channel.write(buffer);
                    }
                    channel.force(true);
                }
                move(temp, target);
            } finally {
                Files.deleteIfExists(temp);
            }
        } catch (IOException e) {
            throw new DsecException("could not store the document " + key + " in " + root + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Optional<byte[]> getDocument(String key) {
        Path file = root.resolve(LayerStore.checkDocumentKey(key));
        try {
            return Optional.of(Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new DsecException("could not read the document " + key + " in " + root + ": " + e.getMessage(), e);
        }
    }

    @Override
    public List<String> listDocuments(String prefix) {
        List<String> keys = new ArrayList<>();
        // Only the first path element can be a directory of documents here (blobs/, refs/ and tmp/ are the store's own).
        int slash = prefix.indexOf('/');
        Path start = slash < 0 ? root : root.resolve(prefix.substring(0, slash));
        if (!Files.isDirectory(start)) {
            return keys;
        }
        try (Stream<Path> files = Files.walk(start)) {
            files.filter(Files::isRegularFile).map(p -> root.relativize(p).toString())
                .filter(k -> k.startsWith(prefix) && !k.startsWith("blobs/") && !k.startsWith("refs/") && !k.startsWith("tmp/"))
                .forEach(keys::add);
        } catch (IOException e) {
            throw new DsecException("could not list the documents " + prefix + "* in " + root + ": " + e.getMessage(), e);
        }
        keys.sort(null);
        return keys;
    }

    @Override
    public void deleteDocument(String key) {
        try {
            Files.deleteIfExists(root.resolve(LayerStore.checkDocumentKey(key)));
        } catch (IOException e) {
            throw new DsecException("could not delete the document " + key + " in " + root + ": " + e.getMessage(), e);
        }
    }

    /** {@code blobs/sha256/<hex>.erofs}. */
    public Path blobPath(String digest) {
        checkDigest(digest);
        return blobs.resolve(digest.substring("sha256:".length()) + ".erofs");
    }

    private Path blobRecordPath(String digest) {
        return blobs.resolve(digest.substring("sha256:".length()) + ".json");
    }

    private Path refPath(LayerKind kind, String name, String version) {
        // name and version were checked by Layer: no '/', and they cannot be "." or "..".
        return refs.resolve(kind.name().toLowerCase(Locale.ROOT)).resolve(name).resolve(version + ".json");
    }

    private static void checkDigest(String digest) {
        if (digest == null || !DIGEST.matcher(digest).matches()) {
            throw new InvalidSpecException("layer.digest", digest, "a digest is sha256:<64 lowercase hex digits>");
        }
    }

    private void writeJson(Path target, LayerRecord record) throws IOException {
        Files.createDirectories(target.getParent());
        Path temp = Files.createTempFile(tmp, "record-", ".json.tmp");
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                channel.write(java.nio.ByteBuffer.wrap(JSON.writeValueAsBytes(record)));
                channel.force(true);
            }
            move(temp, target);
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    private Optional<Layer> readJson(Path file) {
        try {
            return Optional.of(JSON.readValue(file.toFile(), LayerRecord.class).toLayer());
        } catch (NoSuchFileException | java.io.FileNotFoundException e) {
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            LOG.warn("ignoring the unreadable layer record {}: {}", file, e.toString());
            return Optional.empty();
        }
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException | FileAlreadyExistsException e) {
            throw new IOException("cannot rename " + from + " to " + to + " atomically: " + e.getMessage(), e);
        }
    }
}
