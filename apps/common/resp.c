/* resp.c - RESP2 request parsing in place and reply writing (see resp.h). */
#include "resp.h"

#include <string.h>

/* The integer line at p[*i..n) after its type byte: digits and CRLF.
 * Returns 1 (value in *v, *i past the CRLF), 0 (incomplete) or -1. */
static inline __attribute__((always_inline)) int
int_line(const char *p, size_t n, size_t *i, int64_t *v)
{
    size_t k = *i;
    bool neg = k < n && p[k] == '-';
    k += neg;
    size_t digits = k;
    /* At most 18 digits: far past every bound. The loop reads a 19th to
     * refuse it; unsigned, so that one may wrap without undefined
     * behaviour (an accepted value is below 10^18: it fits int64_t). */
    size_t lim = n - k > 19 ? k + 19 : n;
    uint64_t x = 0;
    while (k < lim && (unsigned)(p[k] - '0') < 10)
        x = x * 10 + (uint64_t)(p[k++] - '0');
    if (k - digits > 18)
        return -1;
    if (k == n)
        return 0;
    if (k == digits || p[k] != '\r')
        return -1;
    if (k + 1 == n)
        return 0;
    if (p[k + 1] != '\n')
        return -1;
    *v = neg ? -(int64_t)x : (int64_t)x;
    *i = k + 2;
    return 1;
}

static long fail(resp_req *r, const char *why)
{
    r->err = why;
    return -1;
}

static long need_more(resp_req *r, size_t need)
{
    r->need = need;
    if (need > RESP_MAX_REQUEST)
        return fail(r, "request too big");
    return 0;
}

/* An inline command: words separated by spaces or tabs up to LF (a CR
 * before it is dropped). No quoting. */
static long parse_inline(const char *p, size_t n, resp_req *r)
{
    size_t lim = n < RESP_MAX_INLINE ? n : RESP_MAX_INLINE;
    const char *nl = memchr(p, '\n', lim);
    if (!nl) {
        if (n >= RESP_MAX_INLINE)
            return fail(r, "too big inline request");
        r->need = n + 1;
        return 0;
    }
    size_t end = (size_t)(nl - p);
    size_t len = end && p[end - 1] == '\r' ? end - 1 : end;
    r->argc = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i == len)
            break;
        size_t s = i;
        while (i < len && p[i] != ' ' && p[i] != '\t')
            i++;
        if (r->argc == RESP_MAX_ARGS)
            return fail(r, "too many arguments");
        r->argv[r->argc] = p + s;
        r->argl[r->argc] = (uint32_t)(i - s);
        r->argc++;
    }
    return (long)end + 1;
}

long resp_parse(const char *p, size_t n, resp_req *r)
{
    r->argc = 0;
    r->need = 0;
    if (!n) {
        r->need = 1;
        return 0;
    }
    if (p[0] != '*')
        return parse_inline(p, n, r);
    size_t i = 1;
    int64_t count;
    int rc = int_line(p, n, &i, &count);
    if (rc < 0)
        return fail(r, "invalid multibulk length");
    if (rc == 0)
        return need_more(r, n + 1);
    if (count <= 0)
        return (long)i;                 /* *0 and *-1: nothing to do */
    if (count > RESP_MAX_ARGS)
        return fail(r, "invalid multibulk length");
    for (unsigned k = 0; k < (unsigned)count; k++) {
        /* At least "$0\r\n\r\n" for each argument still to come. */
        size_t rest = ((size_t)count - k) * 6;
        if (i >= n)
            return need_more(r, i + rest);
        if (p[i] != '$')
            return fail(r, p[i] == '*' ? "nested arrays are not requests"
                                       : "expected '$'");
        size_t at = i + 1;
        int64_t len;
        rc = int_line(p, n, &at, &len);
        if (rc < 0)
            return fail(r, "invalid bulk length");
        if (rc == 0)
            return need_more(r, n + 1 > i + rest ? n + 1 : i + rest);
        if (len < 0 || len > RESP_MAX_BULK)
            return fail(r, "invalid bulk length");
        size_t end = at + (size_t)len + 2;
        if (end > n)
            return need_more(r, end + (rest - 6));
        if (p[end - 2] != '\r' || p[end - 1] != '\n')
            return fail(r, "bulk string not followed by CRLF");
        if (end > RESP_MAX_REQUEST)
            return fail(r, "request too big");
        r->argv[k] = p + at;
        r->argl[k] = (uint32_t)len;
        i = end;
    }
    r->argc = (unsigned)count;
    return (long)i;
}

/* ---- replies ---- */

static void put(bytebuf *out, const char *s, size_t n)
{
    bb_append(out, s, n, SIZE_MAX);
}

void resp_ok(bytebuf *out) { put(out, "+OK\r\n", 5); }

void resp_nil(bytebuf *out) { put(out, "$-1\r\n", 5); }

void resp_simple(bytebuf *out, const char *s)
{
    put(out, "+", 1);
    put(out, s, strlen(s));
    put(out, "\r\n", 2);
}

void resp_error(bytebuf *out, const char *s)
{
    put(out, "-", 1);
    put(out, s, strlen(s));
    put(out, "\r\n", 2);
}

size_t resp_fmt_i64(char *buf, int64_t v)
{
    char tmp[20], *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t n = 0;
    if (v < 0)
        buf[n++] = '-';
    memcpy(buf + n, p, (size_t)(tmp + sizeof tmp - p));
    return n + (size_t)(tmp + sizeof tmp - p);
}

/* ":v\r\n", "$v\r\n" or "*v\r\n", formatted by hand: snprintf cost as
 * much as the rest of a GET. */
static void typed_int(bytebuf *out, char type, int64_t v)
{
    char tmp[24];
    tmp[0] = type;
    size_t n = 1 + resp_fmt_i64(tmp + 1, v);
    tmp[n++] = '\r';
    tmp[n++] = '\n';
    put(out, tmp, n);
}

void resp_int(bytebuf *out, int64_t v)
{
    if (v >= 0 && v <= 9) {
        char s[4] = {':', (char)('0' + v), '\r', '\n'};
        put(out, s, 4);
        return;
    }
    typed_int(out, ':', v);
}

void resp_bulk(bytebuf *out, const char *p, size_t n)
{
    typed_int(out, '$', (int64_t)n);
    put(out, p, n);
    put(out, "\r\n", 2);
}

void resp_array(bytebuf *out, size_t n) { typed_int(out, '*', (int64_t)n); }

int resp_is(const char *a, size_t n, const char *w)
{
    for (size_t i = 0; i < n; i++, w++)
        if (!*w || ((unsigned char)a[i] | 0x20) != ((unsigned char)*w | 0x20))
            return 0;
    return *w == 0;
}
