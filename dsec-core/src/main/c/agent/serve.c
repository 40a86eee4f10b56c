/* serve mode: the agent's event loop, connections and execs. Single-threaded; every fd is close-on-exec. */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define OUT_HIGH (8u << 20)   /* queued bytes at which exec output stops being read for a connection */
#define OUT_LOW (1u << 20)    /* ... and resumes */
#define GRACE_MS 100          /* after the process exits, how long its pipes may stay open */
#define SHUTDOWN_MS 2000      /* after SIGTERM, how long execs get before SIGKILL */
#define MAX_ARGS 65536

enum { SRC_LISTEN, SRC_SIGNAL, SRC_CONN, SRC_PIPE };

struct src {
    int kind;
    void *obj;
    int idx;
};

struct conn {
    struct src src;
    int fd;
    bool dead;
    bool want_out;
    bool paused;
    struct buf in;
    struct buf out;
    size_t out_off;
    struct conn *next;
};

struct stream {
    struct src src;
    int fd;
    bool paused;
    uint64_t head_left;
    uint64_t tail_cap;
    uint64_t overflow;
    uint8_t *ring;
    size_t ring_alloc;
    size_t ring_start;
    size_t ring_len;
};

struct exec {
    struct conn *conn;
    uint32_t id;
    pid_t pid;
    bool exited;
    bool timed_out;
    int status;
    int64_t start_us;
    int64_t end_us;
    int64_t deadline_ms;
    int64_t grace_ms;
    struct stream s[2];
    struct exec *next;
};

static int ep = -1, sig_fd = -1, listen_fd = -1;
static struct src listen_src = {SRC_LISTEN, NULL, 0};
static struct src signal_src = {SRC_SIGNAL, NULL, 0};
static bool is_pid1, shutting_down;
static int64_t shutdown_deadline;
static pid_t parent_pid;
static struct conn *conns, *dead_conns;
static struct exec *execs, *dead_execs;
static uint64_t instance_id;
static int64_t start_ms;
static const char *socket_path;
static uint8_t io_buf[OUTPUT_CHUNK];

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void) {
    return now_us() / 1000;
}

static void ep_add(int fd, uint32_t events, struct src *src) {
    struct epoll_event ev = {.events = events, .data.ptr = src};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        fprintf(stderr, "dsec-agent: epoll_ctl add: %s\n", strerror(errno));
    }
}

static void ep_mod(int fd, uint32_t events, struct src *src) {
    struct epoll_event ev = {.events = events, .data.ptr = src};
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

/* Removes from epoll before closing: a forked child may still hold a copy of the fd. */
static void ep_close(int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
}

static size_t pending(const struct conn *c) {
    return c->out.len - c->out_off;
}

/* ---------- streams ---------- */

static void stream_pause(struct stream *s) {
    if (!s->paused && s->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
        s->paused = true;
    }
}

static void stream_resume(struct stream *s) {
    if (s->paused && s->fd >= 0) {
        ep_add(s->fd, EPOLLIN, &s->src);
    }
    s->paused = false;
}

static void stream_close(struct stream *s) {
    if (s->fd >= 0) {
        if (s->paused) {
            close(s->fd);
        } else {
            ep_close(s->fd);
        }
        s->fd = -1;
    }
    s->paused = false;
}

static void conn_resume(struct conn *c) {
    c->paused = false;
    for (struct exec *e = execs; e; e = e->next) {
        if (e->conn == c) {
            stream_resume(&e->s[0]);
            stream_resume(&e->s[1]);
        }
    }
}

/* Keeps the last tail_cap bytes past the head; the array grows up to tail_cap as output comes. */
static void ring_push(struct stream *s, const uint8_t *p, size_t n) {
    s->overflow += n;
    size_t cap = (size_t)s->tail_cap;
    if (cap == 0 || n == 0) {
        return;
    }
    if (s->ring_alloc < cap && s->ring_len + n > s->ring_alloc) {
        size_t want = s->ring_alloc ? s->ring_alloc * 2 : 4096;
        if (want < s->ring_len + n) {
            want = s->ring_len + n;
        }
        if (want > cap) {
            want = cap;
        }
        s->ring = xrealloc(s->ring, want);  /* not wrapped yet: ring_start is 0 while ring_alloc < cap */
        s->ring_alloc = want;
    }
    size_t alloc = s->ring_alloc;
    if (n >= alloc) {
        memcpy(s->ring, p + (n - alloc), alloc);
        s->ring_start = 0;
        s->ring_len = alloc;
        return;
    }
    size_t pos = (s->ring_start + s->ring_len) % alloc;
    size_t first = alloc - pos < n ? alloc - pos : n;
    memcpy(s->ring + pos, p, first);
    memcpy(s->ring, p + first, n - first);
    size_t len = s->ring_len + n;
    if (len > alloc) {
        s->ring_start = (s->ring_start + (len - alloc)) % alloc;
        len = alloc;
    }
    s->ring_len = len;
}

static void stream_data(struct exec *e, int which, const uint8_t *p, size_t n) {
    struct stream *s = &e->s[which];
    size_t take = s->head_left < n ? (size_t)s->head_left : n;
    if (take) {
        if (e->conn) {
            struct buf *out = &e->conn->out;
            size_t f = frame_begin(out, which ? R_STDERR : R_STDOUT, e->id);
            put_bytes(out, p, take);
            frame_end(out, f);
        }
        s->head_left -= take;
        p += take;
        n -= take;
    }
    ring_push(s, p, n);
}

static void finish_exec(struct exec *e);

static void maybe_finish(struct exec *e) {
    if (e->exited && e->s[0].fd < 0 && e->s[1].fd < 0) {
        finish_exec(e);
    }
}

/* Reads what the pipe holds now; returns false once it reached EOF (and closed). */
static bool stream_read(struct exec *e, int which, int rounds) {
    struct stream *s = &e->s[which];
    for (int i = 0; i < rounds && s->fd >= 0; i++) {
        if (s->head_left > 0 && e->conn && pending(e->conn) > OUT_HIGH) {
            stream_pause(s);
            e->conn->paused = true;
            return true;
        }
        ssize_t n = read(s->fd, io_buf, sizeof io_buf);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                return true;
            }
            n = 0;
        }
        if (n == 0) {
            stream_close(s);
            return false;
        }
        stream_data(e, which, io_buf, (size_t)n);
    }
    return s->fd >= 0;
}

static void kill_group(struct exec *e, int sig) {
    if (kill(-e->pid, sig) < 0 && errno == ESRCH && !e->exited) {
        kill(e->pid, sig);  /* the child may not have called setsid() yet */
    }
}

static void send_tail(struct exec *e, int which) {
    struct stream *s = &e->s[which];
    if (s->overflow == 0) {
        return;
    }
    struct buf *out = &e->conn->out;
    uint64_t gap = s->overflow - s->ring_len;
    size_t off = 0;
    do {
        size_t n = s->ring_len - off < OUTPUT_CHUNK ? s->ring_len - off : OUTPUT_CHUNK;
        size_t f = frame_begin(out, which ? R_STDERR_TAIL : R_STDOUT_TAIL, e->id);
        put_u64(out, off == 0 ? gap : 0);
        buf_reserve(out, n);
        for (size_t i = 0; i < n;) {
            size_t pos = (s->ring_start + off + i) % s->ring_alloc;
            size_t run = s->ring_alloc - pos < n - i ? s->ring_alloc - pos : n - i;
            put_bytes(out, s->ring + pos, run);
            i += run;
        }
        frame_end(out, f);
        off += n;
    } while (off < s->ring_len);
}

static void finish_exec(struct exec *e) {
    for (int w = 0; w < 2; w++) {
        if (e->s[w].fd >= 0) {
            if (e->s[w].paused) {
                stream_resume(&e->s[w]);
            }
            stream_read(e, w, 64);  /* drain what is buffered, then close even if a grandchild holds it */
            stream_close(&e->s[w]);
        }
    }
    if (e->conn) {
        send_tail(e, 0);
        send_tail(e, 1);
        int code = 0, sig = 0;
        if (WIFEXITED(e->status)) {
            code = WEXITSTATUS(e->status);
        } else if (WIFSIGNALED(e->status)) {
            sig = WTERMSIG(e->status);
            code = 128 + sig;
        }
        struct buf *out = &e->conn->out;
        size_t f = frame_begin(out, R_EXIT, e->id);
        put_u32(out, (uint32_t)code);
        put_u32(out, (uint32_t)sig);
        put_u8(out, e->timed_out);
        put_u64(out, e->s[0].overflow - e->s[0].ring_len);
        put_u64(out, e->s[1].overflow - e->s[1].ring_len);
        put_u64(out, (uint64_t)(e->end_us - e->start_us));
        frame_end(out, f);
    }
    for (int w = 0; w < 2; w++) {
        free(e->s[w].ring);
        e->s[w].ring = NULL;
    }
    for (struct exec **pp = &execs; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }
    e->next = dead_execs;
    dead_execs = e;
}

/* ---------- exec ---------- */

static void free_strv(char **v) {
    if (v) {
        for (char **p = v; *p; p++) {
            free(*p);
        }
        free(v);
    }
}

static char **get_strv(struct reader *r) {
    uint32_t n = get_u32(r);
    if (r->err || n > MAX_ARGS || n > r->len / 4) {
        r->err = true;
        return NULL;
    }
    char **v = calloc((size_t)n + 1, sizeof *v);
    if (!v) {
        r->err = true;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        v[i] = get_cstr(r);
        if (r->err) {
            free_strv(v);
            return NULL;
        }
    }
    return v;
}

static void child_fail(const char *what, const char *arg, int err, int code) {
    char msg[512];
    int n = arg ? snprintf(msg, sizeof msg, "dsec: %s %s: %s\n", what, arg, strerror(err))
                : snprintf(msg, sizeof msg, "dsec: %s: %s\n", what, strerror(err));
    if (n > (int)sizeof msg - 1) {
        n = (int)sizeof msg - 1;
    }
    if (n > 0) {
        ssize_t ignored = write(2, msg, (size_t)n);
        (void)ignored;
    }
    _exit(code);
}

static void move_fd(int from, int to) {
    if (from == to) {
        fcntl(to, F_SETFD, 0);
    } else if (dup2(from, to) < 0) {
        _exit(126);
    }
}

static void child(char **argv, char **envp, const char *cwd, int32_t uid, int32_t gid, int in_fd, int out_fd, int err_fd) {
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) {
        signal(sig, SIG_DFL);
    }
    umask(022);
    /* When the sandbox runs out of memory its own cgroup's OOM killer must take the command, never the agent: raising
     * the score needs no privilege, and every process the command starts inherits it. */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        if (write(oom, "500", 3) < 0) {
            /* best effort: without it the largest process is still the usual victim */
        }
        close(oom);
    }
    move_fd(in_fd, 0);
    move_fd(out_fd, 1);
    move_fd(err_fd, 2);
    if (gid >= 0) {
        gid_t g = (gid_t)gid;
        if (geteuid() == 0 && setgroups(1, &g) < 0) {
            child_fail("setgroups", NULL, errno, 126);
        }
        if ((getgid() != g || getegid() != g) && setgid(g) < 0) {
            child_fail("setgid", NULL, errno, 126);
        }
    }
    if (uid >= 0 && (getuid() != (uid_t)uid || geteuid() != (uid_t)uid) && setuid((uid_t)uid) < 0) {
        child_fail("setuid", NULL, errno, 126);
    }
    if (cwd[0] && chdir(cwd) < 0) {
        child_fail("chdir", cwd, errno, 126);
    }
    environ = envp;
    execvp(argv[0], argv);
    int err = errno;
    child_fail(argv[0], NULL, err, err == ENOENT ? 127 : 126);
}

static int stdin_fd(const uint8_t *data, uint32_t len) {
    if (len == 0) {
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    int fd = memfd_create("dsec-stdin", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        done += (size_t)n;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static void start_exec(struct conn *c, uint32_t id, struct reader *r) {
    char **argv = get_strv(r);
    char **envp = argv ? get_strv(r) : NULL;
    char *cwd = envp ? get_cstr(r) : NULL;
    int32_t uid = (int32_t)get_u32(r);
    int32_t gid = (int32_t)get_u32(r);
    uint64_t timeout_ms = get_u64(r);
    uint64_t max_out = get_u64(r);
    uint32_t in_len;
    const uint8_t *in_data = get_bytes(r, &in_len);
    int in_fd = -1, po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (r->err || !argv || !argv[0] || !argv[0][0]) {
        send_error(&c->out, id, EINVAL, "malformed EXEC request");
        goto done;
    }
    if (shutting_down) {
        send_error(&c->out, id, ESHUTDOWN, "the agent is shutting down");
        goto done;
    }
    in_fd = stdin_fd(in_data, in_len);
    if (in_fd < 0) {
        send_error(&c->out, id, errno, "cannot make stdin");
        goto done;
    }
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        send_error(&c->out, id, errno, "cannot make pipes");
        goto done;
    }
    int64_t start = now_us();
    pid_t pid = fork();
    if (pid < 0) {
        send_error(&c->out, id, errno, "fork failed");
        goto done;
    }
    if (pid == 0) {
        child(argv, envp, cwd, uid, gid, in_fd, po[1], pe[1]);
    }
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    struct exec *e = calloc(1, sizeof *e);
    if (!e) {
        abort();
    }
    e->conn = c;
    e->id = id;
    e->pid = pid;
    e->start_us = start;
    e->deadline_ms = timeout_ms ? now_ms() + (int64_t)(timeout_ms > (1ull << 40) ? (1ull << 40) : timeout_ms) : 0;
    int fds[2] = {po[0], pe[0]};
    for (int w = 0; w < 2; w++) {
        struct stream *s = &e->s[w];
        s->fd = fds[w];
        fcntl(s->fd, F_SETFL, O_NONBLOCK);
        s->src = (struct src){SRC_PIPE, e, w};
        s->head_left = max_out ? max_out / 2 : UINT64_MAX;
        s->tail_cap = max_out ? max_out - max_out / 2 : 0;
        ep_add(s->fd, EPOLLIN, &s->src);
    }
    po[0] = pe[0] = -1;
    e->next = execs;
    execs = e;
    size_t f = frame_begin(&c->out, R_EXEC_STARTED, id);
    put_u32(&c->out, (uint32_t)pid);
    frame_end(&c->out, f);
done:
    if (in_fd >= 0) close(in_fd);
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
    }
    free_strv(argv);
    free_strv(envp);
    free(cwd);
}

static void signal_exec(struct conn *c, uint32_t id, struct reader *r) {
    uint32_t target = get_u32(r);
    uint32_t sig = get_u32(r);
    if (r->err || sig < 1 || sig >= (uint32_t)NSIG) {
        send_error(&c->out, id, EINVAL, "malformed SIGNAL request");
        return;
    }
    for (struct exec *e = execs; e; e = e->next) {
        if (e->conn == c && e->id == target) {
            kill_group(e, (int)sig);
            send_empty(&c->out, R_OKAY, id);
            return;
        }
    }
    send_error(&c->out, id, ESRCH, "no such exec on this connection");
}

/* ---------- connections ---------- */

static void conn_close(struct conn *c) {
    if (c->dead) {
        return;
    }
    c->dead = true;
    ep_close(c->fd);
    c->fd = -1;
    for (struct conn **pp = &conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    for (struct exec *e = execs; e; e = e->next) {
        if (e->conn == c) {
            e->conn = NULL;  /* keeps running; output is counted, EXIT dropped */
            stream_resume(&e->s[0]);
            stream_resume(&e->s[1]);
        }
    }
    buf_free(&c->in);
    buf_free(&c->out);
    c->next = dead_conns;
    dead_conns = c;
}

static void conn_flush(struct conn *c) {
    while (!c->dead && c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                break;
            }
            conn_close(c);
            return;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out.len) {
        c->out_off = c->out.len = 0;
        if (c->out.cap > (1u << 20)) {
            buf_free(&c->out);
        }
    } else if (c->out_off > (1u << 20)) {
        memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
        c->out.len -= c->out_off;
        c->out_off = 0;
    }
    bool want = c->out_off < c->out.len;
    if (want != c->want_out) {
        c->want_out = want;
        ep_mod(c->fd, EPOLLIN | (want ? EPOLLOUT : 0), &c->src);
    }
    if (c->paused && pending(c) < OUT_LOW) {
        conn_resume(c);
    }
}

static void handle_request(struct conn *c, uint8_t type, uint32_t id, struct reader *r) {
    switch (type) {
    case T_HELLO: {
        size_t f = frame_begin(&c->out, R_HELLO, id);
        put_u32(&c->out, PROTOCOL_VERSION);
        put_u32(&c->out, (uint32_t)getpid());
        put_u64(&c->out, instance_id);
        put_u64(&c->out, (uint64_t)(now_ms() - start_ms));
        put_str(&c->out, AGENT_VERSION);
        frame_end(&c->out, f);
        break;
    }
    case T_PING:
        send_empty(&c->out, R_PONG, id);
        break;
    case T_EXEC:
        start_exec(c, id, r);
        break;
    case T_SIGNAL:
        signal_exec(c, id, r);
        break;
    case T_READ:
    case T_WRITE:
    case T_STAT:
    case T_LIST:
    case T_MKDIR:
    case T_REMOVE:
        file_request(&c->out, type, id, r);
        break;
    default: {
        char msg[64];
        snprintf(msg, sizeof msg, "unknown request type 0x%02x", type);
        send_error(&c->out, id, ENOSYS, msg);
        break;
    }
    }
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void conn_parse(struct conn *c) {
    size_t pos = 0;
    while (c->in.len - pos >= 4) {
        uint32_t len = le32(c->in.data + pos);
        if (len < 5 || len > MAX_FRAME) {
            fprintf(stderr, "dsec-agent: frame of %u bytes is outside 5..%u; closing the connection\n", len, MAX_FRAME);
            conn_close(c);
            return;
        }
        if (c->in.len - pos - 4 < len) {
            break;
        }
        const uint8_t *f = c->in.data + pos + 4;
        struct reader r = {f + 5, len - 5, false};
        handle_request(c, f[0], le32(f + 1), &r);
        pos += 4 + (size_t)len;
    }
    if (pos) {
        memmove(c->in.data, c->in.data + pos, c->in.len - pos);
        c->in.len -= pos;
    }
    if (c->in.len == 0 && c->in.cap > (256u << 10)) {
        buf_free(&c->in);
    }
}

static void conn_readable(struct conn *c) {
    for (int i = 0; i < 16 && !c->dead; i++) {
        buf_reserve(&c->in, OUTPUT_CHUNK);
        ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                return;
            }
            conn_close(c);
            return;
        }
        if (n == 0) {
            conn_close(c);
            return;
        }
        c->in.len += (size_t)n;
        conn_parse(c);
    }
}

static void accept_all(void) {
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return;
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->src = (struct src){SRC_CONN, c, 0};
        c->next = conns;
        conns = c;
        ep_add(fd, EPOLLIN, &c->src);
    }
}

/* ---------- signals, timers, shutdown ---------- */

static void reap(void) {
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == EINTR) {
            continue;
        }
        if (p <= 0) {
            return;
        }
        for (struct exec *e = execs; e; e = e->next) {
            if (e->pid == p && !e->exited) {
                e->exited = true;
                e->status = st;
                e->end_us = now_us();
                e->deadline_ms = 0;
                e->grace_ms = now_ms() + GRACE_MS;
                maybe_finish(e);
                break;
            }
        }
    }
}

static void on_signals(void) {
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(sig_fd, &si, sizeof si);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n != (ssize_t)sizeof si) {
            break;
        }
        if (si.ssi_signo == SIGCHLD) {
            continue;
        }
        /* ssi_pid is 0 when the sender is outside our pid namespace (the host); in --listen mode the parent counts too. */
        bool outside = si.ssi_pid == 0 || (!is_pid1 && (pid_t)si.ssi_pid == parent_pid);
        if (!outside) {
            continue;
        }
        for (struct exec *e = execs; e; e = e->next) {
            if (!e->exited) {
                kill_group(e, (int)si.ssi_signo);
            }
        }
        if (si.ssi_signo == SIGTERM && !shutting_down) {
            shutting_down = true;
            shutdown_deadline = now_ms() + SHUTDOWN_MS;
        }
    }
    reap();
}

static void final_exit(void) {
    for (struct conn *c = conns; c; c = c->next) {
        if (pending(c) > 0) {
            fcntl(c->fd, F_SETFL, 0);
            struct timeval tv = {1, 0};
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            conn_flush(c);
        }
    }
    if (socket_path) {
        unlink(socket_path);
    }
    exit(0);
}

static void check_timers(void) {
    int64_t now = now_ms();
    struct exec *next;
    for (struct exec *e = execs; e; e = next) {
        next = e->next;
        if (!e->exited && e->deadline_ms && now >= e->deadline_ms) {
            e->timed_out = true;
            e->deadline_ms = 0;
            kill_group(e, SIGKILL);
        }
        if (e->exited && now >= e->grace_ms) {
            if (e->conn && (e->s[0].paused || e->s[1].paused)) {
                e->grace_ms = now + GRACE_MS;  /* the host is slow to read; wait for it */
            } else {
                finish_exec(e);
            }
        }
    }
    if (shutting_down && now >= shutdown_deadline) {
        for (struct exec *e = execs; e; e = e->next) {
            kill_group(e, SIGKILL);
        }
        final_exit();
    }
}

static int next_timeout(void) {
    int64_t now = now_ms(), first = -1;
    for (struct exec *e = execs; e; e = e->next) {
        int64_t t = e->exited ? e->grace_ms : e->deadline_ms;
        if (t && (first < 0 || t < first)) {
            first = t;
        }
    }
    if (shutting_down && (first < 0 || shutdown_deadline < first)) {
        first = shutdown_deadline;
    }
    if (first < 0) {
        return -1;
    }
    int64_t d = first - now;
    if (d < 0) {
        d = 0;
    }
    return d > 60000 ? 60000 : (int)d + 1;
}

static void collect_garbage(void) {
    while (dead_conns) {
        struct conn *c = dead_conns;
        dead_conns = c->next;
        free(c);
    }
    while (dead_execs) {
        struct exec *e = dead_execs;
        dead_execs = e->next;
        free(e);
    }
}

static void ensure_stdio(void) {
    int null = open("/dev/null", O_RDWR);
    if (null < 0) {
        return;
    }
    for (int fd = 1; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) < 0) {
            dup2(null, fd);
        }
    }
    if (null != 0) {
        dup2(null, 0);
        if (null > 2) {
            close(null);
        }
    }
}

int serve_main(int lfd, const char *path) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    is_pid1 = getpid() == 1;
    parent_pid = getppid();
    socket_path = path;
    ensure_stdio();
    umask(0);
    if (!is_pid1) {
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max > 1048576 ? 1048576 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    listen_fd = lfd;
    fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        sigaddset(&set, handled[i]);
    }
    sigprocmask(SIG_BLOCK, &set, NULL);
    sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (sig_fd < 0 || ep < 0) {
        fprintf(stderr, "dsec-agent serve: %s: %s\n", sig_fd < 0 ? "signalfd" : "epoll_create1", strerror(errno));
        return 1;
    }
    if (getrandom(&instance_id, sizeof instance_id, GRND_NONBLOCK) != (ssize_t)sizeof instance_id) {
        instance_id = (uint64_t)now_us() ^ ((uint64_t)getpid() << 32);
    }
    start_ms = now_ms();
    ep_add(listen_fd, EPOLLIN, &listen_src);
    ep_add(sig_fd, EPOLLIN, &signal_src);
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, next_timeout());
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "dsec-agent serve: epoll_wait: %s\n", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct src *s = evs[i].data.ptr;
            switch (s->kind) {
            case SRC_LISTEN:
                accept_all();
                break;
            case SRC_SIGNAL:
                on_signals();
                break;
            case SRC_CONN: {
                struct conn *c = s->obj;
                if (c->dead) {
                    break;
                }
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                    conn_readable(c);
                }
                if (!c->dead && (evs[i].events & EPOLLOUT)) {
                    conn_flush(c);
                }
                break;
            }
            case SRC_PIPE: {
                struct exec *e = s->obj;
                if (e->s[s->idx].fd < 0 || e->s[s->idx].paused) {
                    break;
                }
                if (!stream_read(e, s->idx, 16)) {
                    maybe_finish(e);
                }
                break;
            }
            }
        }
        check_timers();
        for (struct conn *c = conns, *next; c; c = next) {
            next = c->next;
            if (pending(c) > 0 && !c->want_out) {
                conn_flush(c);
            }
        }
        collect_garbage();
        if (shutting_down && !execs) {
            final_exit();
        }
    }
}
