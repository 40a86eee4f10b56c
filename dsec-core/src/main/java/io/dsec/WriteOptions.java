package io.dsec;

/**
 * How {@link SandboxFiles#write} creates a file.
 *
 * @param mode permission bits of a new file
 * @param uid  owner, or -1 to leave it to the agent (root)
 * @param gid  group, or -1
 * @param createParents whether missing parent directories are made (mode 0755)
 */
public record WriteOptions(int mode, int uid, int gid, boolean createParents) {
    public static final WriteOptions DEFAULT = new WriteOptions(0644, -1, -1, true);

    public WriteOptions {
        if (mode < 0 || mode > 07777) {
            throw new InvalidSpecException("write.mode", Integer.toOctalString(mode), "give permission bits between 0 and 07777, such as 0644");
        }
        if (uid < -1 || gid < -1) {
            throw new InvalidSpecException("write.owner", uid + ":" + gid, "give non-negative ids, or -1 to keep the default");
        }
    }

    public static WriteOptions mode(int mode) {
        return new WriteOptions(mode, -1, -1, true);
    }

    public WriteOptions owner(int newUid, int newGid) {
        return new WriteOptions(mode, newUid, newGid, createParents);
    }

    public WriteOptions createParents(boolean create) {
        return new WriteOptions(mode, uid, gid, create);
    }
}
