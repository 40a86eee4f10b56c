/* dsec-agent entry point: launch | serve | version. */
#include "agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void usage(void) {
    fprintf(stderr,
            "usage: dsec-agent launch --socket PATH -- CMD [ARGS...]\n"
            "       dsec-agent serve --fd N | --listen PATH\n"
            "       dsec-agent version\n");
    exit(2);
}

/* Binds a listening unix socket at path (mode 0600); returns the fd or -1 with *step naming what failed. */
static int make_listener(const char *path, int type_flags, const char **step) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        *step = "socket path";
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr.sun_path, path);
    if (unlink(path) < 0 && errno != ENOENT) {
        *step = "unlink";
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | type_flags, 0);
    if (fd < 0) {
        *step = "socket";
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        *step = "bind";
        goto fail;
    }
    if (chmod(path, 0600) < 0) {
        *step = "chmod";
        goto fail;
    }
    if (listen(fd, 128) < 0) {
        *step = "listen";
        goto fail;
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int launch(int argc, char **argv) {
    const char *path = NULL;
    int i = 2;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else {
            usage();
        }
    }
    if (!path || i >= argc) {
        usage();
    }
    const char *step = NULL;
    int fd = make_listener(path, 0, &step);
    if (fd < 0) {
        fprintf(stderr, "dsec-agent launch: %s: %s\n", step, strerror(errno));
        return 125;
    }
    if (fd != 3) {
        if (dup2(fd, 3) < 0) {
            fprintf(stderr, "dsec-agent launch: dup2: %s\n", strerror(errno));
            return 125;
        }
        close(fd);
    }
    /* EPERM: already a process group leader; it keeps its session. */
    if (setsid() < 0 && errno != EPERM) {
        fprintf(stderr, "dsec-agent launch: setsid: %s\n", strerror(errno));
        return 125;
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "dsec-agent launch: exec %s: %s\n", argv[i], strerror(errno));
    return 125;
}

static int serve(int argc, char **argv) {
    if (argc != 4) {
        usage();
    }
    if (!strcmp(argv[2], "--fd")) {
        char *end;
        long fd = strtol(argv[3], &end, 10);
        if (*end || fd < 0 || fd > 1 << 20) {
            usage();
        }
        int accepting = 0;
        socklen_t len = sizeof accepting;
        if (getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting) {
            fprintf(stderr, "dsec-agent serve: fd %ld is not a listening socket\n", fd);
            return 1;
        }
        return serve_main((int)fd, NULL);
    }
    if (!strcmp(argv[2], "--listen")) {
        const char *step = NULL;
        int fd = make_listener(argv[3], SOCK_CLOEXEC, &step);
        if (fd < 0) {
            fprintf(stderr, "dsec-agent serve: %s: %s\n", step, strerror(errno));
            return 1;
        }
        return serve_main(fd, argv[3]);
    }
    usage();
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
    }
    if (!strcmp(argv[1], "launch")) {
        return launch(argc, argv);
    }
    if (!strcmp(argv[1], "serve")) {
        return serve(argc, argv);
    }
    if (!strcmp(argv[1], "version")) {
        printf("dsec-agent %s (protocol %u)\n", AGENT_VERSION, PROTOCOL_VERSION);
        return 0;
    }
    usage();
    return 2;
}
