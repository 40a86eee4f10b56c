/* Tries calls the sandbox's seccomp profile must refuse and prints "name=ERRNO" per call (OK when it worked).
 * Built static by the integration tests and run inside a sandbox. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int e) {
    switch (e) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EBADF: return "EBADF";
    case ENOTTY: return "ENOTTY";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EFAULT: return "EFAULT";
    case EXDEV: return "EXDEV";
    case ENOENT: return "ENOENT";
    default: return strerror(e);
    }
}

static void report(const char *name, long rc) {
    printf("%s=%s\n", name, rc < 0 ? errname(errno) : "OK");
    fflush(stdout);
}

int main(void) {
    int a = open("/tmp/probe-a", O_RDWR | O_CREAT | O_TRUNC, 0644);
    int b = open("/tmp/probe-b", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (a < 0 || b < 0 || write(a, "x", 1) != 1) {
        perror("probe setup");
        return 2;
    }
    char buf[256] = {0};

    report("mount", mount("none", "/mnt", "tmpfs", 0, NULL));
    report("umount2", umount2("/proc", MNT_DETACH));
    report("unshare", unshare(CLONE_NEWNS));
    report("setns", setns(a, 0));
    report("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
    report("clone_newnet", syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0));
    report("clone3", syscall(SYS_clone3, buf, 88));
    report("bpf", syscall(SYS_bpf, 0, buf, 16));
    report("perf_event_open", syscall(SYS_perf_event_open, buf, 0, -1, -1, 0));
    report("keyctl", syscall(SYS_keyctl, 0, 0, 0, 0, 0));
    report("add_key", syscall(SYS_add_key, "user", "k", "v", 1, 0));
    report("userfaultfd", syscall(SYS_userfaultfd, 0));
    report("io_uring_setup", syscall(SYS_io_uring_setup, 1, buf));
    report("init_module", syscall(SYS_init_module, buf, 0, ""));
    report("finit_module", syscall(SYS_finit_module, a, "", 0));
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, 0, 0));
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, a, buf, 0));
    report("ptrace_attach_1", ptrace(PTRACE_ATTACH, 1, 0, 0));
    report("ficlone", ioctl(b, 0x40049409, a));
    report("ficlone_sign_extended", syscall(SYS_ioctl, b, 0xFFFFFFFF00000000UL | 0x40049409UL, a));
    report("ficlonerange", ioctl(b, 0x4020940D, buf));
    report("fideduperange", ioctl(a, 0xC0189436, buf));
    report("xfs_ioc_swapext", ioctl(a, 0xC0C0586D, buf));
    pid_t child = fork();
    if (child == 0) {
        _exit(0);
    }
    report("fork", child);
    if (child > 0) {
        waitpid(child, NULL, 0);
    }
    return 0;
}
