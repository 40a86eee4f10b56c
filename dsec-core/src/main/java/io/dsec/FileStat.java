package io.dsec;

import java.time.Instant;

/**
 * What {@code stat} (or {@code lstat}) says of a path in a sandbox.
 *
 * @param name      the last path element
 * @param type      its type
 * @param mode      permission bits (07777)
 * @param uid       owner
 * @param gid       group
 * @param size      size in bytes
 * @param modified  modification time
 */
public record FileStat(String name, FileType type, int mode, int uid, int gid, long size, Instant modified) {
    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    public boolean isFile() {
        return type == FileType.FILE;
    }
}
