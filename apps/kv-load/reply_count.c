/* reply_count.c - see reply_count.h. */
#include "reply_count.h"

#include <string.h>

/* Offset just past the "\r\n" ending the line that starts at p, or 0 when
 * the line is not complete yet. */
static size_t line_end(const char *buf, size_t p, size_t len)
{
    const char *nl = memchr(buf + p, '\n', len - p);
    if (!nl)
        return 0;
    return (size_t)(nl - buf) + 1;
}

long reply_count(const char *buf, size_t len, reply_tally *t)
{
    size_t p = 0;
    while (p < len) {
        size_t e = line_end(buf, p, len);
        if (!e)
            break;
        if (e - p < 3 || buf[e - 2] != '\r')
            return -1;
        char kind = buf[p];
        if (kind == '+' || kind == ':') {
            t->ok++;
            p = e;
        } else if (kind == '-') {
            if (!t->errors) {
                size_t n = e - 2 - (p + 1);
                if (n >= sizeof t->first_error)
                    n = sizeof t->first_error - 1;
                memcpy(t->first_error, buf + p + 1, n);
                t->first_error[n] = 0;
            }
            t->errors++;
            p = e;
        } else if (kind == '$') {
            long n = 0;
            size_t i = p + 1;
            if (buf[i] == '-' && buf[i + 1] == '1' && i + 2 == e - 2) {
                t->ok++;                    /* $-1: no such key */
                p = e;
                continue;
            }
            for (; i < e - 2; i++) {
                if (buf[i] < '0' || buf[i] > '9' || n > (1L << 30))
                    return -1;
                n = n * 10 + (buf[i] - '0');
            }
            if (i == p + 1)
                return -1;
            if (len - e < (size_t)n + 2)
                break;                      /* body not all here yet */
            if (buf[e + n] != '\r' || buf[e + n + 1] != '\n')
                return -1;
            t->ok++;
            p = e + (size_t)n + 2;
        } else {
            return -1;
        }
    }
    return (long)p;
}
