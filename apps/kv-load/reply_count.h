/* reply_count.h - counts whole RESP2 replies in a byte stream, just enough
 * for a load client: simple strings (+OK), integers, bulk strings
 * ($3\r\nxxx\r\n, $-1) and errors (-ERR ...). Arrays and anything else
 * are a protocol error: the load client never asks for them. */
#ifndef KV_LOAD_REPLY_COUNT_H
#define KV_LOAD_REPLY_COUNT_H

#include <stddef.h>

typedef struct reply_tally {
    unsigned long ok;       /* replies that were not errors */
    unsigned long errors;   /* -ERR ... replies */
    char first_error[96];   /* text of the first error reply */
} reply_tally;

/* Count the whole replies at the start of buf[0..len); returns the bytes
 * they take (a partial reply at the end is left for the next call), or -1
 * when the bytes are not a reply this parser knows. */
long reply_count(const char *buf, size_t len, reply_tally *t);

#endif
