/* sha256.h - SHA-256 (FIPS 180-4), small and self-contained, so bulk
 * receivers can name a hash of what arrived without an OpenSSL dependency. */
#ifndef APPS_SHA256_H
#define APPS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t buf[64];
    unsigned fill;
} sha256;

void sha256_init(sha256 *s);
void sha256_update(sha256 *s, const void *data, size_t len);
void sha256_final(sha256 *s, uint8_t out[32]);
/* Lower-case hex of the digest into out (65 bytes). */
void sha256_hex(const uint8_t d[32], char out[65]);

#endif
