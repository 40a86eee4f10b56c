/* File requests: READ, WRITE, STAT, LIST, MKDIR, REMOVE. Each runs to completion on the event loop. */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint8_t file_type(mode_t m) {
    if (S_ISREG(m)) return 0;
    if (S_ISDIR(m)) return 1;
    if (S_ISLNK(m)) return 2;
    if (S_ISFIFO(m)) return 3;
    if (S_ISSOCK(m)) return 4;
    if (S_ISCHR(m)) return 5;
    if (S_ISBLK(m)) return 6;
    return 7;
}

static void put_stat(struct buf *out, const struct stat *st, const char *name) {
    put_u8(out, file_type(st->st_mode));
    put_u32(out, (uint32_t)(st->st_mode & 07777));
    put_u32(out, (uint32_t)st->st_uid);
    put_u32(out, (uint32_t)st->st_gid);
    put_u64(out, (uint64_t)st->st_size);
    put_u64(out, (uint64_t)(int64_t)st->st_mtim.tv_sec);
    put_u32(out, (uint32_t)st->st_mtim.tv_nsec);
    put_str(out, name);
}

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') {
        n--;
    }
    const char *slash = memrchr(path, '/', n);
    if (!slash) {
        return path;
    }
    if (slash == path && n == 1) {
        return "/";
    }
    return slash + 1;
}

/* mkdir -p: every directory it makes gets mode; an existing directory is fine. Returns 0 or an errno. */
static int make_dirs(const char *path, mode_t mode) {
    size_t n = strlen(path);
    char *p = xmalloc(n + 1);
    memcpy(p, path, n + 1);
    while (n > 1 && p[n - 1] == '/') {
        p[--n] = 0;
    }
    int err = 0;
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) {
            continue;
        }
        if (p[i - 1] == '/') {
            continue;
        }
        char saved = p[i];
        p[i] = 0;
        if (mkdir(p, mode) < 0) {
            int e = errno;
            struct stat st;
            if (e == EEXIST || e == EROFS || e == EACCES || e == EPERM) {
                if (stat(p, &st) == 0) {
                    if (!S_ISDIR(st.st_mode)) {
                        err = i == n ? EEXIST : ENOTDIR;
                        break;
                    }
                    p[i] = saved;
                    continue;
                }
            }
            err = e;
            break;
        }
        p[i] = saved;
    }
    free(p);
    return err;
}

static int make_parents(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) {
        return ENOENT;
    }
    size_t n = (size_t)(slash - path);
    char *dir = xmalloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = 0;
    int err = make_dirs(dir, 0755);
    free(dir);
    return err;
}

static void do_read(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    uint64_t offset = get_u64(r);
    uint32_t length = get_u32(r);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed READ request");
        free(path);
        return;
    }
    if (length > MAX_IO_CHUNK) {
        length = MAX_IO_CHUNK;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        send_error(out, id, errno, NULL);
        free(path);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        send_error(out, id, errno, NULL);
    } else if (S_ISDIR(st.st_mode)) {
        send_error(out, id, EISDIR, NULL);
    } else if (!S_ISREG(st.st_mode)) {
        send_error(out, id, EINVAL, "not a regular file");
    } else {
        size_t f = frame_begin(out, R_DATA, id);
        buf_reserve(out, length);
        size_t got = 0;
        int err = 0;
        while (got < length) {
            ssize_t n = pread(fd, out->data + out->len + got, length - got, (off_t)(offset + got));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                err = errno;
                break;
            }
            if (n == 0) {
                break;
            }
            got += (size_t)n;
        }
        if (err) {
            out->len = f;
            send_error(out, id, err, NULL);
        } else {
            out->len += got;
            frame_end(out, f);
        }
    }
    close(fd);
    free(path);
}

static void do_write(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    uint32_t flags = get_u32(r);
    uint32_t mode = get_u32(r) & 07777;
    int32_t uid = (int32_t)get_u32(r);
    int32_t gid = (int32_t)get_u32(r);
    uint64_t offset = get_u64(r);
    uint32_t len;
    const uint8_t *data = get_bytes(r, &len);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed WRITE request");
        free(path);
        return;
    }
    bool append = flags & WRITE_APPEND;
    int base = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    bool created = false;
    int fd = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        fd = open(path, base | O_CREAT | O_EXCL, (mode_t)mode);
        if (fd >= 0) {
            created = true;
            break;
        }
        if (errno == EEXIST) {
            fd = open(path, base | (append ? 0 : O_TRUNC));
            break;
        }
        if (errno == ENOENT && (flags & WRITE_CREATE_PARENTS) && attempt == 0) {
            int err = make_parents(path);
            if (err) {
                send_error(out, id, err, NULL);
                free(path);
                return;
            }
            continue;
        }
        break;
    }
    if (fd < 0) {
        send_error(out, id, errno, NULL);
        free(path);
        return;
    }
    int err = 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        err = errno;
    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
    } else if (created && fchmod(fd, (mode_t)mode) < 0) {
        err = errno;
    } else if ((uid >= 0 || gid >= 0) && fchown(fd, (uid_t)uid, (gid_t)gid) < 0) {
        err = errno;
    } else if (created && (mode & 06000) && fchmod(fd, (mode_t)mode) < 0) {
        err = errno;  /* fchown clears set-id bits; put them back */
    }
    uint64_t pos = append ? offset : 0;
    size_t done = 0;
    while (!err && done < len) {
        ssize_t n = pwrite(fd, data + done, len - done, (off_t)(pos + done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = errno;
            break;
        }
        done += (size_t)n;
    }
    if (close(fd) < 0 && !err && errno != EINTR) {
        err = errno;
    }
    if (err) {
        send_error(out, id, err, err == EINVAL ? "not a regular file" : NULL);
    } else {
        send_empty(out, R_OKAY, id);
    }
    free(path);
}

static void do_stat(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    uint8_t follow = get_u8(r);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed STAT request");
        free(path);
        return;
    }
    struct stat st;
    int rc = follow ? stat(path, &st) : lstat(path, &st);
    if (rc < 0) {
        send_error(out, id, errno, NULL);
    } else {
        size_t f = frame_begin(out, R_STAT, id);
        put_stat(out, &st, base_name(path));
        frame_end(out, f);
    }
    free(path);
}

struct entry {
    char *name;
    struct stat st;
};

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void do_list(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed LIST request");
        return;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        send_error(out, id, errno, NULL);
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        send_error(out, id, errno, NULL);
        close(fd);
        return;
    }
    struct entry *entries = NULL;
    size_t count = 0, cap = 0;
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            err = errno;
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            continue;
        }
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            continue;  /* removed meanwhile */
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 32;
            entries = xrealloc(entries, cap * sizeof *entries);
        }
        entries[count].name = strdup(de->d_name);
        entries[count].st = st;
        count++;
    }
    closedir(d);
    if (err) {
        send_error(out, id, err, NULL);
    } else {
        qsort(entries, count, sizeof *entries, entry_cmp);
        size_t i = 0;
        do {
            size_t f = frame_begin(out, R_LIST, id);
            size_t more_at = out->len;
            put_u8(out, 0);
            size_t count_at = out->len;
            put_u32(out, 0);
            uint32_t n = 0;
            while (i < count && out->len - f < (1u << 20)) {
                put_stat(out, &entries[i].st, entries[i].name);
                i++;
                n++;
            }
            out->data[more_at] = i < count;
            for (int k = 0; k < 4; k++) {
                out->data[count_at + k] = (uint8_t)(n >> (8 * k));
            }
            frame_end(out, f);
        } while (i < count);
    }
    for (size_t i = 0; i < count; i++) {
        free(entries[i].name);
    }
    free(entries);
}

static void do_mkdir(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    uint32_t mode = get_u32(r) & 07777;
    uint8_t parents = get_u8(r);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed MKDIR request");
        free(path);
        return;
    }
    int err = 0;
    if (parents) {
        err = make_dirs(path, (mode_t)mode);
    } else if (mkdir(path, (mode_t)mode) < 0) {
        err = errno;
    }
    if (err) {
        send_error(out, id, err, NULL);
    } else {
        send_empty(out, R_OKAY, id);
    }
    free(path);
}

/* Empties the directory dfd (and closes dfd), never following symlinks. Returns 0 or an errno. */
static int remove_tree_fd(int dfd) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return e;
    }
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                err = errno;
            }
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            continue;
        }
        bool is_dir;
        if (de->d_type != DT_UNKNOWN) {
            is_dir = de->d_type == DT_DIR;
        } else {
            struct stat st;
            if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT) {
                    continue;
                }
                err = errno;
                break;
            }
            is_dir = S_ISDIR(st.st_mode);
        }
        if (is_dir) {
            int cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0) {
                err = errno;
                break;
            }
            err = remove_tree_fd(cfd);
            if (err) {
                break;
            }
            if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                err = errno;
                break;
            }
        } else if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT) {
            err = errno;
            break;
        }
    }
    closedir(d);
    return err;
}

static void do_remove(struct buf *out, uint32_t id, struct reader *r) {
    char *path = get_cstr(r);
    uint8_t recursive = get_u8(r);
    if (r->err) {
        send_error(out, id, EINVAL, "malformed REMOVE request");
        free(path);
        return;
    }
    int err = 0;
    struct stat st;
    if (lstat(path, &st) < 0) {
        err = errno;
    } else if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) < 0) {
            err = errno;
        }
    } else {
        if (recursive) {
            int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                err = errno;
            } else {
                err = remove_tree_fd(fd);
            }
        }
        if (!err && rmdir(path) < 0) {
            err = errno;
        }
    }
    if (err) {
        send_error(out, id, err, NULL);
    } else {
        send_empty(out, R_OKAY, id);
    }
    free(path);
}

void file_request(struct buf *out, uint8_t type, uint32_t id, struct reader *r) {
    switch (type) {
    case T_READ: do_read(out, id, r); break;
    case T_WRITE: do_write(out, id, r); break;
    case T_STAT: do_stat(out, id, r); break;
    case T_LIST: do_list(out, id, r); break;
    case T_MKDIR: do_mkdir(out, id, r); break;
    case T_REMOVE: do_remove(out, id, r); break;
    default: send_error(out, id, ENOSYS, "unknown request type"); break;
    }
}
