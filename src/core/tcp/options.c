/* options.c - TCP options: parsing with every length checked against the
 * header, and building the SYN and established layouts (4-byte aligned). */
#include "tcp.h"

/* A TFO option's cookie of n bytes at c: a request (0) or 4..16 bytes
 * (RFC 7413 4.1.1); any other length is ignored as an unknown option. */
static void opt_tfo(const uint8_t *c, uint32_t n, bool exp, tcp_opts *o)
{
    if (n != 0 && (n < 4 || n > TFO_COOKIE_MAX))
        return;
    o->has |= OPT_TFO;
    o->tfo = c;
    o->tfo_len = (uint8_t)n;
    o->tfo_exp = exp;
}

static bool opt_one(const uint8_t *p, uint32_t olen, bool syn, tcp_opts *o)
{
    switch (p[0]) {
    case TCPOPT_MSS:
        if (olen != 4)
            return false;
        if (syn) {
            o->has |= OPT_MSS;
            o->mss = rd16(p + 2);
        }
        return true;
    case TCPOPT_WS:
        if (olen != 3)
            return false;
        if (syn) {
            o->has |= OPT_WS;
            o->ws = p[2] > TCP_MAX_WS ? TCP_MAX_WS : p[2]; /* RFC 7323 2.3 */
        }
        return true;
    case TCPOPT_SACK_PERM:
        if (olen != 2)
            return false;
        if (syn)
            o->has |= OPT_SACK_PERM;
        return true;
    case TCPOPT_TS:
        if (olen != 10)
            return false;
        o->has |= OPT_TS;
        o->tsval = rd32(p + 2);
        o->tsecr = rd32(p + 6);
        return true;
    case TCPOPT_SACK: {
        if (olen < 10 || (olen - 2) % 8 != 0 || olen > 34)
            return false;
        uint32_t n = (olen - 2) / 8;
        o->has |= OPT_SACK;
        o->nsack = (uint8_t)n;
        for (uint32_t i = 0; i < n; i++) {
            o->sack[i][0] = rd32(p + 2 + 8 * i);
            o->sack[i][1] = rd32(p + 6 + 8 * i);
        }
        return true;
    }
    case TCPOPT_TFO:
        if (syn)
            opt_tfo(p + 2, olen - 2, false, o);
        return true;
    case TCPOPT_EXP:
        if (syn && olen >= 4 && rd16(p + 2) == TFO_EXP_MAGIC)
            opt_tfo(p + 4, olen - 4, true, o);
        return true;
    default:
        return true;            /* unknown: skipped by its length */
    }
}

bool tcp_opts_parse(const uint8_t *opt, uint32_t len, bool syn, tcp_opts *o)
{
    o->has = 0;
    o->nsack = 0;
    uint32_t i = 0;
    while (i < len) {
        uint8_t kind = opt[i];
        if (kind == TCPOPT_EOL)
            break;
        if (kind == TCPOPT_NOP) {
            i++;
            continue;
        }
        if (i + 1 >= len)
            return false;
        uint32_t olen = opt[i + 1];
        if (olen < 2 || i + olen > len)
            return false;
        if (!opt_one(opt + i, olen, syn, o))
            return false;
        i += olen;
    }
    return true;
}

static uint8_t *put_ts(uint8_t *p, uint32_t tsval, uint32_t tsecr)
{
    p[0] = TCPOPT_TS;
    p[1] = 10;
    wr32(p + 2, tsval);
    wr32(p + 6, tsecr);
    return p + 10;
}

uint32_t tcp_opts_syn(uint8_t *p, uint16_t mss, int ws, bool sack, bool ts,
                      uint32_t tsval, uint32_t tsecr)
{
    uint8_t *q = p;
    q[0] = TCPOPT_MSS;
    q[1] = 4;
    wr16(q + 2, mss);
    q += 4;
    if (sack && ts) {
        q[0] = TCPOPT_SACK_PERM;
        q[1] = 2;
        q = put_ts(q + 2, tsval, tsecr);
    } else if (ts) {
        q[0] = q[1] = TCPOPT_NOP;
        q = put_ts(q + 2, tsval, tsecr);
    } else if (sack) {
        q[0] = q[1] = TCPOPT_NOP;
        q[2] = TCPOPT_SACK_PERM;
        q[3] = 2;
        q += 4;
    }
    if (ws >= 0) {
        q[0] = TCPOPT_NOP;
        q[1] = TCPOPT_WS;
        q[2] = 3;
        q[3] = (uint8_t)ws;
        q += 4;
    }
    return (uint32_t)(q - p);
}

uint32_t tcp_opts_tfo(uint8_t *p, const uint8_t *cookie, uint32_t len,
                      bool exp)
{
    uint32_t olen = (exp ? 4u : 2u) + len;
    uint32_t pad = (4 - (olen & 3)) & 3;
    uint8_t *q = p;
    for (uint32_t i = 0; i < pad; i++)
        *q++ = TCPOPT_NOP;
    q[0] = exp ? TCPOPT_EXP : TCPOPT_TFO;
    q[1] = (uint8_t)olen;
    if (exp)
        wr16(q + 2, TFO_EXP_MAGIC);
    q += exp ? 4 : 2;
    for (uint32_t i = 0; i < len; i++)
        q[i] = cookie[i];
    return pad + olen;
}

uint32_t tcp_opts_est(uint8_t *p, bool ts, uint32_t tsval, uint32_t tsecr,
                      const uint32_t (*sack)[2], uint32_t nsack)
{
    uint8_t *q = p;
    if (ts) {
        q[0] = q[1] = TCPOPT_NOP;
        q = put_ts(q + 2, tsval, tsecr);
    }
    if (nsack) {
        q[0] = q[1] = TCPOPT_NOP;
        q[2] = TCPOPT_SACK;
        q[3] = (uint8_t)(2 + 8 * nsack);
        q += 4;
        for (uint32_t i = 0; i < nsack; i++, q += 8) {
            wr32(q, sack[i][0]);
            wr32(q + 4, sack[i][1]);
        }
    }
    return (uint32_t)(q - p);
}
