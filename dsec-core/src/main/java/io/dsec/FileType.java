package io.dsec;

/** The type of a file in a sandbox. */
public enum FileType { FILE, DIRECTORY, SYMLINK, FIFO, SOCKET, CHAR_DEVICE, BLOCK_DEVICE, UNKNOWN }
