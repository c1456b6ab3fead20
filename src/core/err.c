/* err.c - error codes and close reasons as words, for an embedder's
 * messages (tern_strerror, tern_close_reason_name). */
#include "tern.h"

const char *tern_strerror(int err)
{
    static const char *const names[] = {
        [TERN_OK] = "no error",
        [TERN_EINVAL] = "invalid argument",
        [TERN_ENOMEM] = "table full",
        [TERN_EADDRINUSE] = "port in use",
        [TERN_ENOTCONN] = "not connected",
        [TERN_EAGAIN] = "no send space",
        [TERN_EMSGSIZE] = "message too long",
        [TERN_ENOBUFS] = "no buffer",
        [TERN_EAFNOSUPPORT] = "address family not supported",
    };
    unsigned e = err < 0 ? 0u - (unsigned)err : (unsigned)err;
    if (e >= sizeof names / sizeof names[0])
        return "unknown error";
    return names[e];
}

const char *tern_close_reason_name(int reason)
{
    static const char *const names[] = {
        [TERN_CLOSE_NORMAL] = "closed",
        [TERN_CLOSE_RESET] = "reset by peer",
        [TERN_CLOSE_TIMEOUT] = "timed out",
        [TERN_CLOSE_REFUSED] = "connection refused",
        [TERN_CLOSE_ABORTED] = "aborted",
        [TERN_CLOSE_NO_ROUTE] = "no route (ARP unanswered)",
    };
    if (reason < 0 || reason >= (int)(sizeof names / sizeof names[0]))
        return "unknown reason";
    return names[reason];
}
