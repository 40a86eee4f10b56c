/*
 * dsec-fuse-holder: keeps a reference to a /dev/fuse file so that the FUSE connection outlives the JVM that serves it.
 *
 *   dsec-fuse-holder --pid <jvm pid> --fd <fd in that process> --state <file>
 *
 * Takes its own copy of the fd with pidfd_open + pidfd_getfd (no SCM_RIGHTS), writes "<holder pid> <fd>\n" to the
 * state file atomically (temporary file + rename), prints "ready" on stdout and closes stdout, then waits until
 * SIGTERM/SIGINT or until the connection is gone (poll reports POLLERR on /dev/fuse after unmount or abort). A new
 * JVM takes the fd back with pidfd_getfd on the pid and fd of the state file. On exit the holder removes the state
 * file if it still names it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static void die(int code, const char *what) {
    fprintf(stderr, "dsec-fuse-holder[%d]: %s: %s\n", (int) getpid(), what, strerror(errno));
    exit(code);
}

static long parse_long(const char *s, const char *name) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0) {
        fprintf(stderr, "dsec-fuse-holder: bad %s: %s\n", name, s);
        exit(64);
    }
    return v;
}

static int write_state(const char *state, int fd) {
    char tmp[4096];
    char line[64];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%d", state, (int) getpid());
    if (n < 0 || (size_t) n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int len = snprintf(line, sizeof line, "%d %d\n", (int) getpid(), fd);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        return -1;
    }
    if (write(out, line, (size_t) len) != len || fsync(out) != 0) {
        int saved = errno;
        close(out);
        unlink(tmp);
        errno = saved;
        return -1;
    }
    close(out);
    if (rename(tmp, state) != 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

/* Removes the state file only when it still names this holder (a newer holder may have replaced it). */
static void remove_state(const char *state) {
    char buf[64];
    int in = open(state, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        return;
    }
    ssize_t n = read(in, buf, sizeof buf - 1);
    close(in);
    if (n <= 0) {
        return;
    }
    buf[n] = '\0';
    if (atoi(buf) == (int) getpid()) {
        unlink(state);
    }
}

int main(int argc, char **argv) {
    long pid = -1, target_fd = -1;
    const char *state = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pid") == 0) {
            pid = parse_long(argv[i + 1], "--pid");
        } else if (strcmp(argv[i], "--fd") == 0) {
            target_fd = parse_long(argv[i + 1], "--fd");
        } else if (strcmp(argv[i], "--state") == 0) {
            state = argv[i + 1];
        } else {
            fprintf(stderr, "dsec-fuse-holder: unknown argument %s\n", argv[i]);
            return 64;
        }
    }
    if (pid <= 0 || target_fd < 0 || state == NULL || argc % 2 != 1) {
        fprintf(stderr, "usage: dsec-fuse-holder --pid <pid> --fd <fd> --state <file>\n");
        return 64;
    }

    /* A session of its own: the death of the JVM, its process group or its terminal does not reach the holder. */
    setsid();
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    if (sigprocmask(SIG_BLOCK, &stop, NULL) != 0) {
        die(70, "sigprocmask");
    }

    int pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
    if (pidfd < 0) {
        die(71, "pidfd_open");
    }
    int fd = (int) syscall(SYS_pidfd_getfd, pidfd, (int) target_fd, 0);
    if (fd < 0) {
        die(72, "pidfd_getfd");
    }
    close(pidfd);
    if (write_state(state, fd) != 0) {
        die(73, "writing the state file");
    }

    /* Tell the JVM the fd is held, then let go of stdout and stdin: the JVM may die at any time after this. */
    static const char ready[] = "ready\n";
    if (write(STDOUT_FILENO, ready, sizeof ready - 1) != (ssize_t) (sizeof ready - 1)) {
        fprintf(stderr, "dsec-fuse-holder[%d]: could not report readiness: %s\n", (int) getpid(), strerror(errno));
    }
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }

    /*
     * Wait for a stop signal, checking once a second whether the connection is gone. Polling /dev/fuse continuously
     * would wake this process on every request, so the fd is polled with a zero timeout between signal waits.
     */
    for (;;) {
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&stop, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            break;
        }
        struct pollfd p = {.fd = fd, .events = 0, .revents = 0};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
            break;
        }
    }
    remove_state(state);
    close(fd);
    return 0;
}
