/* sha256.h - SHA-256 (FIPS 180-4), for spec hashes in banners and the dispatch table. */
#ifndef FUSEGEN_SHA256_H
#define FUSEGEN_SHA256_H
#include <stddef.h>
#include <stdint.h>

void fg_sha256(const void *data, size_t len, uint8_t digest[32]);
/* Lower-case hex of digest into hex[65] (NUL-terminated). */
void fg_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
