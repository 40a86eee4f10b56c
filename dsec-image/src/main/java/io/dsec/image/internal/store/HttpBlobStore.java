package io.dsec.image.internal.store;

import io.dsec.DsecException;
import io.dsec.ImageFetchException;
import io.dsec.image.BlobNotFoundException;
import io.dsec.image.BlobStore;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Read-only blobs over HTTP(S): key {@code k} is {@code GET <base>k}. Any static file server over a blob directory
 * works (nginx serves Range requests natively). One JDK {@link HttpClient}, which pools and reuses connections and is
 * safe for concurrent use.
 */
public final class HttpBlobStore implements BlobStore {
    static final String READ_ONLY = "the http store is read-only; push through a directory or S3 store";

    private final URI base;
    private final Duration readTimeout;
    private final Duration connectTimeout;
    private final ExecutorService executor;
    private final HttpClient client;

    /** @param base ends in '/' */
    public HttpBlobStore(URI base, Duration connectTimeout, Duration readTimeout) {
        this.base = base;
        this.connectTimeout = connectTimeout;
        this.readTimeout = readTimeout;
        AtomicInteger n = new AtomicInteger();
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "dsec-http-store-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(connectTimeout)
            .followRedirects(HttpClient.Redirect.NORMAL)
            .executor(executor)
            .build();
    }

    @Override
    public byte[] get(String key) {
        HttpResponse<byte[]> r = send(key, request(key).GET().build(), "read");
        if (r.statusCode() == 200) {
            return r.body();
        }
        throw status("read", key, r);
    }

    @Override
    public byte[] getRange(String key, long offset, int length) {
        Keys.check(key);
        Keys.checkRange(offset, length);
        if (length == 0) {
            if (!exists(key)) {
                throw new BlobNotFoundException(describe(), key);
            }
            return new byte[0];
        }
        HttpRequest req = request(key).header("Range", "bytes=" + offset + "-" + (offset + length - 1)).GET().build();
        HttpResponse<byte[]> r = send(key, req, "read");
        switch (r.statusCode()) {
            case 206:
                return r.body();
            case 200: {
                // The server ignored Range and sent the whole blob: cut our range out of it.
                byte[] all = r.body();
                if (offset >= all.length) {
                    return new byte[0];
                }
                int n = (int) Math.min(length, all.length - offset);
                byte[] out = new byte[n];
                System.arraycopy(all, (int) offset, out, 0, n);
                return out;
            }
            case 416:
                return new byte[0]; // offset at or past the end
            default:
                throw status("read", key, r);
        }
    }

    @Override
    public boolean exists(String key) {
        HttpResponse<byte[]> r = send(key, request(key).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), "check");
        if (r.statusCode() == 200) {
            return true;
        }
        if (r.statusCode() == 404 || r.statusCode() == 410 || redirectedToDirectory(r)) {
            return false;
        }
        throw status("check", key, r);
    }

    @Override
    public void put(String key, byte[] data) {
        throw new DsecException(READ_ONLY);
    }

    @Override
    public List<String> list(String prefix) {
        throw new DsecException("the http store cannot list keys; list through the directory or S3 store it serves");
    }

    @Override
    public void delete(String key) {
        throw new DsecException(READ_ONLY);
    }

    @Override
    public boolean writable() {
        return false;
    }

    @Override
    public String describe() {
        return "http " + base;
    }

    @Override
    public String toString() {
        return describe();
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }

    private HttpRequest.Builder request(String key) {
        return HttpRequest.newBuilder(base.resolve(Keys.check(key))).timeout(readTimeout);
    }

    private HttpResponse<byte[]> send(String key, HttpRequest request, String what) {
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (HttpConnectTimeoutException e) {
            throw unreachable(what, key, request.uri(), "no connection within " + connectTimeout, e);
        } catch (HttpTimeoutException e) {
            throw unreachable(what, key, request.uri(), "no answer within " + readTimeout, e);
        } catch (ConnectException e) {
            throw unreachable(what, key, request.uri(), "connection refused or failed"
                + (e.getMessage() == null ? "" : " (" + e.getMessage() + ")"), e);
        } catch (IOException e) {
            throw unreachable(what, key, request.uri(), e.toString(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ImageFetchException("interrupted while fetching blob " + key + " from " + request.uri(), e);
        }
    }

    private ImageFetchException unreachable(String what, String key, URI uri, String problem, Exception e) {
        return new ImageFetchException("cannot " + what + " blob " + key + " in " + describe() + " (GET " + uri + "): " + problem
            + "; check that the server is up and reachable from this host (connect timeout " + connectTimeout + ", read timeout "
            + readTimeout + ")", e);
    }

    /** Static servers redirect {@code key} to {@code key/} when it names a directory: that is no blob. */
    private static boolean redirectedToDirectory(HttpResponse<?> r) {
        HttpResponse<?> first = r;
        while (first.previousResponse().isPresent()) {
            first = first.previousResponse().get();
        }
        return first != r && r.statusCode() >= 400 && r.uri().getPath().equals(first.request().uri().getPath() + "/");
    }

    private DsecException status(String what, String key, HttpResponse<?> r) {
        int code = r.statusCode();
        if (code == 404 || code == 410 || redirectedToDirectory(r)) {
            return new BlobNotFoundException(describe(), key);
        }
        String hint = code == 401 || code == 403 ? "check the server's access rules for " + base
            : code >= 500 ? "check the server's health and logs" : "check that " + base + " serves a blob directory";
        return new ImageFetchException("cannot " + what + " blob " + key + " in " + describe() + " (" + r.request().method() + " "
            + r.uri() + "): the server answered " + code + "; " + hint);
    }
}
