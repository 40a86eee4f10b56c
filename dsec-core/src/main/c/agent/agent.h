/* dsec-agent: the in-sandbox agent. See PROTOCOL.md for the wire format. */
#ifndef DSEC_AGENT_H
#define DSEC_AGENT_H

#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_VERSION "0.1.0"
#define PROTOCOL_VERSION 1u
#define MAX_FRAME (4u << 20)          /* most bytes after the length field */
#define MAX_IO_CHUNK (1u << 20)       /* most bytes one READ returns */
#define OUTPUT_CHUNK (64u << 10)      /* most bytes of one STDOUT/STDERR frame */

/* Request types (host -> agent). */
enum {
    T_HELLO = 0x01,
    T_PING = 0x02,
    T_EXEC = 0x10,
    T_SIGNAL = 0x11,
    T_READ = 0x20,
    T_WRITE = 0x21,
    T_STAT = 0x22,
    T_LIST = 0x23,
    T_MKDIR = 0x24,
    T_REMOVE = 0x25,
};

/* Response types (agent -> host). */
enum {
    R_HELLO = 0x81,
    R_PONG = 0x82,
    R_OKAY = 0x83,  /* OK; not R_OK, which unistd.h defines */
    R_ERROR = 0x84,
    R_EXEC_STARTED = 0x90,
    R_STDOUT = 0x91,
    R_STDERR = 0x92,
    R_STDOUT_TAIL = 0x93,
    R_STDERR_TAIL = 0x94,
    R_EXIT = 0x95,
    R_DATA = 0xA0,
    R_STAT = 0xA1,
    R_LIST = 0xA2,
};

/* WRITE flags. */
#define WRITE_APPEND 1u          /* write at the offset, keep the file's other bytes */
#define WRITE_CREATE_PARENTS 2u  /* make missing parent directories (0755) */

/* A growable byte buffer. */
struct buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void buf_reserve(struct buf *b, size_t extra);
void buf_free(struct buf *b);
void put_u8(struct buf *b, uint8_t v);
void put_u32(struct buf *b, uint32_t v);
void put_u64(struct buf *b, uint64_t v);
void put_bytes(struct buf *b, const void *p, size_t n);
void put_str(struct buf *b, const char *s);
/* Starts a frame; returns the offset to hand to frame_end. */
size_t frame_begin(struct buf *b, uint8_t type, uint32_t id);
void frame_end(struct buf *b, size_t start);
void send_error(struct buf *out, uint32_t id, int err, const char *msg);
void send_empty(struct buf *out, uint8_t type, uint32_t id);

/* Reads a request payload; any overrun sets err. */
struct reader {
    const uint8_t *p;
    size_t len;
    bool err;
};

uint8_t get_u8(struct reader *r);
uint32_t get_u32(struct reader *r);
uint64_t get_u64(struct reader *r);
/* A string as a malloc'd NUL-terminated copy; NULL (and err) if it holds a NUL byte or overruns. */
char *get_cstr(struct reader *r);
/* Raw bytes pointing into the payload. */
const uint8_t *get_bytes(struct reader *r, uint32_t *len);

/* File requests (files.c); each appends exactly one response (LIST may span frames) to out. */
void file_request(struct buf *out, uint8_t type, uint32_t id, struct reader *r);

/* Serve mode (serve.c). */
int serve_main(int listen_fd, const char *listen_path);

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);

#endif
