/* parse.h - strict parsers for flag values (numbers, sizes, IPv4 addresses,
 * core lists; endpoints and IPv6 are in endpoint.h). Each returns false on
 * any malformed input and never accepts trailing garbage. */
#ifndef APPS_PARSE_H
#define APPS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool parse_u64(const char *s, uint64_t *out);
/* "256M", "4k", "1G", "100": powers of 1024. */
bool parse_size(const char *s, uint64_t *out);
/* "10G", "100g", "2.5G", "1e9": bit/s, powers of 1000. */
bool parse_rate(const char *s, double *out);
bool parse_double(const char *s, double *out);
/* Dotted IPv4 to host order. */
bool parse_ip4(const char *s, uint32_t *ip);
/* "A.B.C.D/P" (P defaults to 24 when absent). */
bool parse_ip4_prefix(const char *s, uint32_t *ip, unsigned *prefix);
/* "aa:bb:cc:dd:ee:ff". */
bool parse_mac(const char *s, uint8_t mac[6]);
/* "0,1,4-7" -> sorted unique list; false on empty, bad or > max entries. */
bool parse_cores(const char *s, unsigned *cores, unsigned *n, unsigned max);

/* Format helpers. */
char *fmt_ip4(uint32_t ip, char out[16]);

#endif
