/* pcap.c - classic libpcap file writer (see pcap.h). Records are written in
 * host byte order, which the magic number tells readers. */
#include "pcap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PCAP_MAGIC_NS 0xa1b23c4du  /* nanosecond-resolution variant */
#define PCAP_SNAPLEN 262144u
#define PCAP_LINKTYPE_ETHERNET 1u
#define PCAP_STDIO_BUF (1u << 20)  /* big stdio buffer: one write per MiB */

struct tern_pcap {
    FILE *f;
    int own;
    uint64_t frames, errors;
    char *iobuf;
};

struct pcap_file_hdr {
    uint32_t magic;
    uint16_t major, minor;
    int32_t thiszone;
    uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec_hdr {
    uint32_t sec, nsec, incl_len, orig_len;
};

static tern_pcap *start(FILE *f, int own, char *err, size_t errlen)
{
    tern_pcap *pc = calloc(1, sizeof(*pc));
    if (!pc) {
        snprintf(err, errlen, "pcap: out of memory");
        if (own)
            fclose(f);
        return NULL;
    }
    pc->f = f;
    pc->own = own;
    if (own && (pc->iobuf = malloc(PCAP_STDIO_BUF)))
        setvbuf(f, pc->iobuf, _IOFBF, PCAP_STDIO_BUF);
    struct pcap_file_hdr h = {PCAP_MAGIC_NS, 2, 4, 0, 0, PCAP_SNAPLEN,
                              PCAP_LINKTYPE_ETHERNET};
    if (fwrite(&h, sizeof(h), 1, f) != 1) {
        snprintf(err, errlen, "pcap: write header: %s", strerror(errno));
        tern_pcap_close(pc);  /* closes f too when we opened it */
        return NULL;
    }
    return pc;
}

tern_pcap *tern_pcap_open(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "pcap: %s: %s", path, strerror(errno));
        return NULL;
    }
    return start(f, 1, err, errlen);
}

tern_pcap *tern_pcap_open_stream(FILE *f, char *err, size_t errlen)
{
    return start(f, 0, err, errlen);
}

static void put_rec(tern_pcap *pc, uint32_t len, uint64_t now_ns)
{
    struct pcap_rec_hdr r = {
        (uint32_t)(now_ns / 1000000000u), (uint32_t)(now_ns % 1000000000u),
        len < PCAP_SNAPLEN ? len : PCAP_SNAPLEN, len};
    if (fwrite(&r, sizeof(r), 1, pc->f) != 1)
        pc->errors++;
}

int tern_pcap_write(tern_pcap *pc, const tern_buf *frame, uint64_t now_ns)
{
    uint64_t errors = pc->errors;
    uint32_t len = 0;
    for (const tern_buf *s = frame; s; s = s->frag)
        len += s->len;
    put_rec(pc, len, now_ns);
    uint32_t left = len < PCAP_SNAPLEN ? len : PCAP_SNAPLEN;
    for (const tern_buf *s = frame; s && left; s = s->frag) {
        uint32_t n = s->len < left ? s->len : left;
        if (n && fwrite(s->data, 1, n, pc->f) != n)
            pc->errors++;
        left -= n;
    }
    pc->frames++;
    return pc->errors == errors ? 0 : -1;
}

int tern_pcap_write_bytes(tern_pcap *pc, const void *data, uint32_t len,
                          uint64_t now_ns)
{
    tern_buf b = {.data = (uint8_t *)data, .len = len};
    return tern_pcap_write(pc, &b, now_ns);
}

int tern_pcap_flush(tern_pcap *pc) { return fflush(pc->f) == 0 ? 0 : -1; }
uint64_t tern_pcap_frames(const tern_pcap *pc) { return pc->frames; }
uint64_t tern_pcap_errors(const tern_pcap *pc) { return pc->errors; }

void tern_pcap_close(tern_pcap *pc)
{
    if (!pc)
        return;
    if (pc->own)
        fclose(pc->f);
    else
        fflush(pc->f);
    free(pc->iobuf);
    free(pc);
}
