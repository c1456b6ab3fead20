/* http.c - HTTP/1.1 request parsing and the fixed responses (see http.h).
 * Strict enough to answer 400 to garbage (RFC 9112 section 3 request line,
 * section 5 field lines, Host required in 1.1, no obs-fold), lenient in
 * accepting a bare LF as line end (section 2.2 allows it). */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char http_get_req[] = "GET / HTTP/1.1\r\nHost: tern\r\n\r\n";
const size_t http_get_req_len = sizeof http_get_req - 1;

static const char bad_resp[] =
    "HTTP/1.1 400 Bad Request\r\nServer: tern\r\nContent-Length: 0\r\n"
    "Connection: close\r\n\r\n";

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if ((a[i] | 0x20) != (b[i] | 0x20))
            return false;
    return true;
}

/* Does a comma separated header value contain token tok? */
static bool has_token(const char *v, size_t len, const char *tok)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < len && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && ieq(v + s, e - s, tok))
            return true;
    }
    return false;
}

/* End of the head: index just past the empty line, or 0. */
static size_t head_end(const char *p, size_t len, size_t from)
{
    const char *q = p + from, *end = p + len;
    while ((q = memchr(q, '\n', (size_t)(end - q))) != NULL) {
        q++;
        if (q < end && *q == '\n')
            return (size_t)(q - p) + 1;
        if (q + 1 < end && q[0] == '\r' && q[1] == '\n')
            return (size_t)(q - p) + 2;
    }
    return 0;
}

/* One line [p, p+len) without its line end. */
static long parse_request_line(const char *p, size_t len, int *minor)
{
    size_t i = 0;
    while (i < len && is_tchar((unsigned char)p[i]))
        i++;
    if (i == 0 || i > 32 || i >= len || p[i] != ' ')
        return -1;
    size_t t = ++i;
    while (i < len && (unsigned char)p[i] > 0x20 && p[i] != 0x7f)
        i++;
    if (i == t || i >= len || p[i] != ' ')
        return -1;
    i++;
    if (len - i != 8 || memcmp(p + i, "HTTP/1.", 7) != 0 ||
        (p[i + 7] != '0' && p[i + 7] != '1'))
        return -1;
    *minor = p[i + 7] - '0';
    return 0;
}

long http_parse(const char *p, size_t len, http_req *req)
{
    size_t end = head_end(p, len, 0);
    if (!end)
        return len >= HTTP_MAX_HEAD ? -1 : 0;
    if (end > HTTP_MAX_HEAD)
        return -1;
    size_t i = 0;
    /* RFC 9112 2.2: ignore at least one empty line before the request. */
    if (p[0] == '\n')
        i = 1;
    else if (end >= 2 && p[0] == '\r' && p[1] == '\n')
        i = 2;
    int minor = 1;
    bool first = true, conn_close = false, conn_keep = false, host = false;
    bool have_len = false;
    req->body_len = 0;
    while (i < end) {
        const char *nl = memchr(p + i, '\n', end - i);
        size_t ll = (size_t)(nl - (p + i));
        const char *line = p + i;
        if (ll && line[ll - 1] == '\r')
            ll--;
        i = (size_t)(nl - p) + 1;
        if (memchr(line, '\r', ll))
            return -1;                      /* bare CR inside a line */
        if (first) {
            if (parse_request_line(line, ll, &minor))
                return -1;
            first = false;
            continue;
        }
        if (ll == 0)
            break;                          /* the empty line */
        size_t n = 0;
        while (n < ll && is_tchar((unsigned char)line[n]))
            n++;
        if (n == 0 || n >= ll || line[n] != ':')
            return -1;                      /* also catches obs-fold */
        const char *v = line + n + 1;
        size_t vl = ll - n - 1;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            vl--;
        for (size_t k = 0; k < vl; k++)
            if ((unsigned char)v[k] < 0x20 && v[k] != '\t')
                return -1;
        if (ieq(line, n, "host")) {
            if (host)
                return -1;
            host = true;
        } else if (ieq(line, n, "connection")) {
            conn_close |= has_token(v, vl, "close");
            conn_keep |= has_token(v, vl, "keep-alive");
        } else if (ieq(line, n, "content-length")) {
            uint64_t cl = 0;
            if (!vl || vl > 15)
                return -1;
            for (size_t k = 0; k < vl; k++) {
                if (v[k] < '0' || v[k] > '9')
                    return -1;
                cl = cl * 10 + (uint64_t)(v[k] - '0');
            }
            if (have_len && cl != req->body_len)
                return -1;
            have_len = true;
            req->body_len = cl;
        } else if (ieq(line, n, "transfer-encoding")) {
            return -1;                      /* no chunked request bodies */
        }
    }
    if (first || (minor == 1 && !host))
        return -1;
    req->keep_alive = minor == 1 ? !conn_close : (conn_keep && !conn_close);
    return (long)end;
}

static char *build_ok(size_t body, bool close, size_t *len)
{
    char head[160];
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nServer: tern\r\n"
                     "Content-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
                     body, close ? "Connection: close\r\n" : "");
    char *r = malloc((size_t)h + body + 1);
    if (!r)
        return NULL;
    memcpy(r, head, (size_t)h);
    for (size_t i = 0; i < body; i++)
        r[h + i] = (char)('a' + i % 26);
    if (body)
        r[h + body - 1] = '\n';
    *len = (size_t)h + body;
    return r;
}

int http_srv_init(http_srv *s, size_t body_size)
{
    s->body_size = body_size;
    s->ok_keep = build_ok(body_size, false, &s->ok_keep_len);
    s->ok_close = build_ok(body_size, true, &s->ok_close_len);
    s->bad = bad_resp;
    s->bad_len = sizeof bad_resp - 1;
    return s->ok_keep && s->ok_close ? 0 : -1;
}

/* Respond to one parsed request; returns HTTP_CLOSE after a closing one. */
static int respond(http_conn *hc, const http_srv *s, const http_req *r,
                   bytebuf *out)
{
    hc->requests++;
    hc->skip = r->body_len;
    if (r->keep_alive) {
        bb_append(out, s->ok_keep, s->ok_keep_len, SIZE_MAX);
        return HTTP_MORE;
    }
    bb_append(out, s->ok_close, s->ok_close_len, SIZE_MAX);
    hc->closing = true;
    return HTTP_CLOSE;
}

static int reject(http_conn *hc, const http_srv *s, bytebuf *out)
{
    bb_append(out, s->bad, s->bad_len, SIZE_MAX);
    hc->closing = true;
    return HTTP_CLOSE;
}

int http_conn_input(http_conn *hc, const http_srv *s, const char *data,
                    size_t len, bytebuf *out)
{
    http_req r;
    while (len && !hc->closing) {
        if (hc->skip) {
            size_t k = hc->skip < len ? (size_t)hc->skip : len;
            hc->skip -= k;
            data += k;
            len -= k;
            continue;
        }
        if (hc->in.len) {
            /* Slow path: continue a head that began in an earlier segment. */
            size_t old = hc->in.len;
            size_t take = len < HTTP_MAX_HEAD + 1 - old ? len
                                                       : HTTP_MAX_HEAD + 1 - old;
            if (!bb_append(&hc->in, data, take, HTTP_MAX_HEAD + 1))
                return reject(hc, s, out);
            size_t from = hc->scan > 3 ? hc->scan - 3 : 0;
            long h = head_end(bb_data(&hc->in), hc->in.len, from)
                         ? http_parse(bb_data(&hc->in), hc->in.len, &r)
                         : (hc->in.len > HTTP_MAX_HEAD ? -1 : 0);
            if (h < 0)
                return reject(hc, s, out);
            if (h == 0) {
                hc->scan = hc->in.len;
                return HTTP_MORE;           /* all of data is in `in` */
            }
            size_t used = (size_t)h - old;  /* bytes of data in the head */
            hc->in.len = hc->in.off = 0;
            hc->scan = 0;
            data += used;
            len -= used;
            if (respond(hc, s, &r, out) == HTTP_CLOSE)
                return HTTP_CLOSE;
            continue;
        }
        /* Fast path: parse in place. */
        long h = http_parse(data, len, &r);
        if (h < 0)
            return reject(hc, s, out);
        if (h == 0) {
            if (!bb_append(&hc->in, data, len, HTTP_MAX_HEAD + 1))
                return reject(hc, s, out);
            hc->scan = len;
            return HTTP_MORE;
        }
        data += h;
        len -= (size_t)h;
        if (respond(hc, s, &r, out) == HTTP_CLOSE)
            return HTTP_CLOSE;
    }
    return hc->closing ? HTTP_CLOSE : HTTP_MORE;
}

void http_conn_free(http_conn *hc)
{
    bb_free(&hc->in);
}
