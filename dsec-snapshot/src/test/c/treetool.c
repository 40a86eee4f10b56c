/* Test helper run inside sandboxes (built static by the snapshot ITs, shipped in a toolkit layer).
 *   treetool dump ROOT PRUNE...   one line per entry, sorted: path type mode uid gid size mtime link hash xattrs linkgroup
 *   treetool setx PATH NAME VALUE sets an xattr (no symlink following)
 *   treetool sparse PATH SIZE      creates a file of SIZE bytes with data only at 0, SIZE/2 and SIZE-5 (holes between)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static char **prunes;
static int nprunes;
static dev_t rootdev;

struct seen { dev_t dev; ino_t ino; char *path; };
static struct seen *links;
static int nlinks, caplinks;

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint64_t fnv(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) return 0;
    uint64_t h = 1469598103934665603ULL;
    static unsigned char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) { h ^= buf[i]; h *= 1099511628211ULL; }
    close(fd);
    return h;
}

static void xattrs(const char *path) {
    char list[8192];
    ssize_t n = llistxattr(path, list, sizeof list);
    if (n <= 0) { printf(" -"); return; }
    char *names[256]; int k = 0;
    for (char *p = list; p < list + n && k < 256; p += strlen(p) + 1) names[k++] = p;
    qsort(names, k, sizeof *names, cmp);
    printf(" ");
    for (int i = 0; i < k; i++) {
        unsigned char v[4096];
        ssize_t m = lgetxattr(path, names[i], v, sizeof v);
        printf("%s%s=", i ? "," : "", names[i]);
        for (ssize_t j = 0; j < m; j++) printf("%02x", v[j]);
    }
}

static void walk(const char *path) {
    for (int i = 0; i < nprunes; i++) if (strcmp(path, prunes[i]) == 0) return;
    struct stat st;
    if (lstat(path, &st) != 0) { printf("%s ERROR\n", path); return; }
    char type = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : S_ISFIFO(st.st_mode) ? 'p'
        : S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b' : S_ISSOCK(st.st_mode) ? 's' : '?';
    printf("%s %c %04o %u %u", path, type, st.st_mode & 07777, st.st_uid, st.st_gid);
    if (type == 'd') printf(" -"); else printf(" %lld", (long long) st.st_size);
    if (strcmp(path, "/") == 0) printf(" -"); else printf(" %lld.%09ld", (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    if (type == 'l') { char t[4096]; ssize_t n = readlink(path, t, sizeof t - 1); t[n < 0 ? 0 : n] = 0; printf(" ->%s", t); } else printf(" -");
    if (type == 'f') printf(" %016llx", (unsigned long long) fnv(path)); else printf(" -");
    if (type == 'c' || type == 'b') printf(" dev=%u:%u", major(st.st_rdev), minor(st.st_rdev));
    xattrs(path);
    if (type == 'f' && st.st_nlink > 1) {
        const char *group = NULL;
        for (int i = 0; i < nlinks; i++) if (links[i].dev == st.st_dev && links[i].ino == st.st_ino) group = links[i].path;
        if (!group) {
            if (nlinks == caplinks) { caplinks = caplinks ? caplinks * 2 : 64; links = realloc(links, caplinks * sizeof *links); }
            links[nlinks++] = (struct seen) {st.st_dev, st.st_ino, strdup(path)};
            group = path;
        }
        printf(" links=%lu group=%s", (unsigned long) st.st_nlink, group);
    }
    printf("\n");
    if (type != 'd' || (st.st_dev != rootdev && strcmp(path, "/") != 0)) return;
    DIR *d = opendir(path);
    if (!d) return;
    char **names = NULL; int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) { cap = cap ? cap * 2 : 32; names = realloc(names, cap * sizeof *names); }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (int i = 0; i < n; i++) {
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") == 0 ? "" : path, names[i]);
        walk(child);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "dump")) {
        struct stat st;
        if (lstat(argv[2], &st) != 0) { perror(argv[2]); return 1; }
        rootdev = st.st_dev;
        prunes = argv + 3; nprunes = argc - 3;
        walk(argv[2]);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "setx")) {
        if (lsetxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0) != 0) { perror("lsetxattr"); return 1; }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "sparse")) {
        long long size = atoll(argv[3]);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, size) != 0) { perror("sparse"); return 1; }
        if (pwrite(fd, "head", 4, 0) != 4 || pwrite(fd, "middle", 6, size / 2) != 6 || pwrite(fd, "tail\n", 5, size - 5) != 5) { perror("pwrite"); return 1; }
        close(fd);
        return 0;
    }
    fprintf(stderr, "usage: treetool dump ROOT PRUNE... | setx PATH NAME VALUE | sparse PATH SIZE\n");
    return 2;
}
