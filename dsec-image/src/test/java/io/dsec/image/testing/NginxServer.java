package io.dsec.image.testing;

import io.dsec.testing.Capabilities;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * nginx serving a directory on 127.0.0.1 for tests, with its own configuration, pid and logs in a temporary prefix.
 * nginx starts as a daemon: the start command returns only once the master has bound the listening socket, so the
 * server accepts connections when {@link #start} returns, without polling. {@link #close()} stops the master by its pid.
 */
public final class NginxServer implements AutoCloseable {
    private final Path prefix;
    private final long pid;
    private final URI base;

    private NginxServer(Path prefix, long pid, int port) {
        this.prefix = prefix;
        this.pid = pid;
        this.base = URI.create("http://127.0.0.1:" + port + "/");
    }

    /** Skips the test (fails under CI) when nginx is not installed. */
    public static void requireNginx() {
        Capabilities.require(Capabilities.onPath("nginx") || Files.isExecutable(Path.of("/usr/sbin/nginx")),
            "needs nginx to serve blobs over HTTP: apt-get install nginx-light");
    }

    /** Serves {@code root} at {@link #base()}. */
    public static NginxServer start(Path root) throws IOException, InterruptedException {
        String nginx = Files.isExecutable(Path.of("/usr/sbin/nginx")) ? "/usr/sbin/nginx" : "nginx";
        Path prefix = Files.createTempDirectory("dsec-nginx-");
        try {
            Files.createDirectories(prefix.resolve("tmp"));
            String lastError = "";
            // A free port can be taken between choosing it and nginx binding it: try a few.
            for (int attempt = 0; attempt < 5; attempt++) {
                int port = freePort();
                Path conf = prefix.resolve("nginx.conf");
                Files.writeString(conf, config(prefix, root, port));
                Process p = new ProcessBuilder(nginx, "-p", prefix.toString(), "-c", conf.toString(), "-e",
                    prefix.resolve("error.log").toString())
                    .redirectErrorStream(true).redirectOutput(prefix.resolve("start.log").toFile()).start();
                // A file, not a pipe: the daemon may keep the inherited descriptors open.
                boolean exited = p.waitFor(30, TimeUnit.SECONDS);
                String out = Files.readString(prefix.resolve("start.log"), StandardCharsets.UTF_8);
                if (!exited) {
                    p.destroyForcibly();
                    throw new IOException("nginx did not daemonize within 30 s: " + out);
                }
                if (p.exitValue() == 0) {
                    long pid = Long.parseLong(Files.readString(prefix.resolve("nginx.pid")).trim());
                    return new NginxServer(prefix, pid, port);
                }
                lastError = out + readLog(prefix);
                if (!lastError.contains("Address already in use")) {
                    break;
                }
            }
            throw new IOException("nginx did not start: " + lastError);
        } catch (IOException | InterruptedException | RuntimeException e) {
            deleteTree(prefix);
            throw e;
        }
    }

    public URI base() {
        return base;
    }

    public String errorLog() {
        return readLog(prefix);
    }

    @Override
    public void close() throws Exception {
        try {
            ProcessHandle.of(pid).ifPresent(h -> {
                h.destroy(); // SIGTERM: the master stops its workers and exits
                try {
                    h.onExit().get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    h.destroyForcibly();
                }
            });
        } finally {
            deleteTree(prefix);
        }
    }

    private static String config(Path prefix, Path root, int port) {
        String tmp = prefix.resolve("tmp").toString();
        return String.join("\n",
            // Workers read blob files in a root-only temporary directory; ignored when not run as root.
            "user root root;",
            "worker_processes 1;",
            "pid " + prefix.resolve("nginx.pid") + ";",
            "error_log " + prefix.resolve("error.log") + " warn;",
            "events { worker_connections 256; }",
            "http {",
            "  access_log off;",
            "  default_type application/octet-stream;",
            "  sendfile on;",
            "  client_body_temp_path " + tmp + "/body;",
            "  proxy_temp_path " + tmp + "/proxy;",
            "  fastcgi_temp_path " + tmp + "/fastcgi;",
            "  uwsgi_temp_path " + tmp + "/uwsgi;",
            "  scgi_temp_path " + tmp + "/scgi;",
            "  server {",
            "    listen 127.0.0.1:" + port + ";",
            "    server_name localhost;",
            "    root " + root.toAbsolutePath() + ";",
            "    location / { }",
            "  }",
            "}",
            "");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    private static String readLog(Path prefix) {
        try {
            Path log = prefix.resolve("error.log");
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return "";
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException ignored) {
            // already gone
        }
    }
}
