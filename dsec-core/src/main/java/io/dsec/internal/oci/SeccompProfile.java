package io.dsec.internal.oci;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The seccomp filter every container sandbox gets: everything is allowed except calls that change mounts or
 * namespaces, load code into the kernel, reach other processes' memory, or swap file contents behind access
 * control (the XFS_IOC_SWAPEXT trick agents were seen using to bypass it).
 */
final class SeccompProfile {
    private static final int EPERM = 1;
    private static final int ENOSYS = 38;

    /** Refused with EPERM whatever their arguments. */
    static final List<String> DENIED = List.of(
        // mounts and namespaces
        "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
        "fspick", "mount_setattr", "unshare", "setns",
        // kernel attack surface agents have no use for
        "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
        "add_key", "request_key", "keyctl", "lookup_dcookie", "fanotify_init",
        // code into the kernel, or the machine's state
        "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
        "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "iopl", "ioperm",
        // escaping through handles or other processes
        "open_by_handle_at", "name_to_handle_at", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp");

    /** ioctl requests refused with EPERM: file-content swaps and clones that bypass permission checks. */
    static final long XFS_IOC_SWAPEXT = 0xC0C0586DL;
    static final long FICLONE = 0x40049409L;
    static final long FICLONERANGE = 0x4020940DL;
    static final long FIDEDUPERANGE = 0xC0189436L;
    static final List<Long> DENIED_IOCTLS = List.of(XFS_IOC_SWAPEXT, FICLONE, FICLONERANGE, FIDEDUPERANGE);

    /** clone(2) flags that create namespaces; any one of them makes clone fail. */
    static final List<Long> NAMESPACE_FLAGS = List.of(
        0x00020000L /* NEWNS */, 0x02000000L /* NEWCGROUP */, 0x04000000L /* NEWUTS */, 0x08000000L /* NEWIPC */,
        0x10000000L /* NEWUSER */, 0x20000000L /* NEWPID */, 0x40000000L /* NEWNET */, 0x00000080L /* NEWTIME */);

    private SeccompProfile() {
    }

    static ObjectNode toOci() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode seccomp = f.objectNode();
        seccomp.put("defaultAction", "SCMP_ACT_ALLOW");
        seccomp.putArray("architectures").add("SCMP_ARCH_X86_64").add("SCMP_ARCH_X86").add("SCMP_ARCH_X32");
        ArrayNode rules = seccomp.putArray("syscalls");

        ObjectNode denied = rules.addObject();
        ArrayNode names = denied.putArray("names");
        DENIED.forEach(names::add);
        denied.put("action", "SCMP_ACT_ERRNO");
        denied.put("errnoRet", EPERM);

        // clone3 passes its flags in memory seccomp cannot read; ENOSYS makes libc fall back to clone, which it can.
        ObjectNode clone3 = rules.addObject();
        clone3.putArray("names").add("clone3");
        clone3.put("action", "SCMP_ACT_ERRNO");
        clone3.put("errnoRet", ENOSYS);

        for (long flag : NAMESPACE_FLAGS) {
            rules.add(maskedRule(f, "clone", 0, flag, flag));
        }
        // The kernel reads the ioctl request as 32 bits; compare only those so a sign-extended value cannot slip by.
        for (long request : DENIED_IOCTLS) {
            rules.add(maskedRule(f, "ioctl", 1, 0xFFFFFFFFL, request));
        }
        return seccomp;
    }

    private static ObjectNode maskedRule(JsonNodeFactory f, String syscall, int argIndex, long mask, long value) {
        ObjectNode rule = f.objectNode();
        rule.putArray("names").add(syscall);
        rule.put("action", "SCMP_ACT_ERRNO");
        rule.put("errnoRet", EPERM);
        ObjectNode arg = rule.putArray("args").addObject();
        arg.put("index", argIndex);
        arg.put("value", mask);
        arg.put("valueTwo", value);
        arg.put("op", "SCMP_CMP_MASKED_EQ");
        return rule;
    }
}
