/* pcap.h - a minimal writer of classic libpcap capture files (Ethernet link
 * type, nanosecond timestamps), readable by tcpdump, Wireshark and tshark.
 * Any driver can use it to record the frames it sends or receives. */
#ifndef TERN_PCAP_H
#define TERN_PCAP_H

#include <stdint.h>
#include <stdio.h>

#include "tern.h"

typedef struct tern_pcap tern_pcap;

/* Create (truncate) `path` and write the file header. NULL on failure with
 * one line in err. */
tern_pcap *tern_pcap_open(const char *path, char *err, size_t errlen);
/* Same on an open stream; tern_pcap_close flushes but does not close it. */
tern_pcap *tern_pcap_open_stream(FILE *f, char *err, size_t errlen);
/* Append one frame (all of its frag chain) stamped now_ns, taken as
 * nanoseconds since the Unix epoch (a monotonic clock shows up as 1970).
 * Returns 0, or -1 on a write error (counted; later writes still try). */
int tern_pcap_write(tern_pcap *pc, const tern_buf *frame, uint64_t now_ns);
/* Append raw bytes as one frame. */
int tern_pcap_write_bytes(tern_pcap *pc, const void *data, uint32_t len,
                          uint64_t now_ns);
int tern_pcap_flush(tern_pcap *pc);
/* Frames written and write errors so far. */
uint64_t tern_pcap_frames(const tern_pcap *pc);
uint64_t tern_pcap_errors(const tern_pcap *pc);
/* Flush and close (the file only if tern_pcap_open opened it). NULL is ok. */
void tern_pcap_close(tern_pcap *pc);

#endif
