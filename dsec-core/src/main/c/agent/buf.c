#include "agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        static const char msg[] = "dsec-agent: out of memory\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        abort();
    }
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        static const char msg[] = "dsec-agent: out of memory\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        abort();
    }
    return q;
}

void buf_reserve(struct buf *b, size_t extra) {
    if (b->cap - b->len >= extra) {
        return;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        cap *= 2;
    }
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_free(struct buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void put_u8(struct buf *b, uint8_t v) {
    buf_reserve(b, 1);
    b->data[b->len++] = v;
}

void put_u32(struct buf *b, uint32_t v) {
    buf_reserve(b, 4);
    for (int i = 0; i < 4; i++) {
        b->data[b->len++] = (uint8_t)(v >> (8 * i));
    }
}

void put_u64(struct buf *b, uint64_t v) {
    buf_reserve(b, 8);
    for (int i = 0; i < 8; i++) {
        b->data[b->len++] = (uint8_t)(v >> (8 * i));
    }
}

void put_bytes(struct buf *b, const void *p, size_t n) {
    buf_reserve(b, n);
    if (n) {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
}

void put_str(struct buf *b, const char *s) {
    size_t n = strlen(s);
    put_u32(b, (uint32_t)n);
    put_bytes(b, s, n);
}

size_t frame_begin(struct buf *b, uint8_t type, uint32_t id) {
    size_t start = b->len;
    put_u32(b, 0);
    put_u8(b, type);
    put_u32(b, id);
    return start;
}

void frame_end(struct buf *b, size_t start) {
    uint32_t n = (uint32_t)(b->len - start - 4);
    for (int i = 0; i < 4; i++) {
        b->data[start + i] = (uint8_t)(n >> (8 * i));
    }
}

void send_error(struct buf *out, uint32_t id, int err, const char *msg) {
    size_t f = frame_begin(out, R_ERROR, id);
    put_u32(out, (uint32_t)err);
    put_str(out, msg ? msg : strerror(err));
    frame_end(out, f);
}

void send_empty(struct buf *out, uint8_t type, uint32_t id) {
    size_t f = frame_begin(out, type, id);
    frame_end(out, f);
}

uint8_t get_u8(struct reader *r) {
    if (r->err || r->len < 1) {
        r->err = true;
        return 0;
    }
    uint8_t v = r->p[0];
    r->p++;
    r->len--;
    return v;
}

uint32_t get_u32(struct reader *r) {
    if (r->err || r->len < 4) {
        r->err = true;
        return 0;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        v |= (uint32_t)r->p[i] << (8 * i);
    }
    r->p += 4;
    r->len -= 4;
    return v;
}

uint64_t get_u64(struct reader *r) {
    if (r->err || r->len < 8) {
        r->err = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t)r->p[i] << (8 * i);
    }
    r->p += 8;
    r->len -= 8;
    return v;
}

const uint8_t *get_bytes(struct reader *r, uint32_t *len) {
    uint32_t n = get_u32(r);
    if (r->err || r->len < n) {
        r->err = true;
        *len = 0;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->len -= n;
    *len = n;
    return p;
}

char *get_cstr(struct reader *r) {
    uint32_t n;
    const uint8_t *p = get_bytes(r, &n);
    if (r->err) {
        return NULL;
    }
    if (memchr(p, 0, n)) {
        r->err = true;
        return NULL;
    }
    char *s = xmalloc((size_t)n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}
