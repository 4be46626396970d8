/* test_sha256.c - SHA-256 against the FIPS 180-4 example vectors and block-boundary lengths. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sha256.h"

static void check_hash(const void *data, size_t len, const char *want)
{
    uint8_t digest[32];
    char hex[65];
    fg_sha256(data, len, digest);
    fg_sha256_hex(digest, hex);
    TH_STREQ(hex, want);
}

static void check_a(size_t n, const char *want)
{
    char *s = malloc(n ? n : 1);
    if (!s) {
        TH_CHECK(!"out of memory");
        return;
    }
    memset(s, 'a', n);
    check_hash(s, n, want);
    free(s);
}

int main(void)
{
    check_hash("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_hash("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_hash(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_hash(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    check_a(1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

    /* Lengths around the padding boundaries (55/56 bytes: one or two final blocks). */
    check_a(55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    check_a(56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    check_a(63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
    check_a(64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    check_a(119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
    check_a(120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");

    /* Every byte value, three times over. */
    unsigned char all[768];
    for (size_t i = 0; i < sizeof all; i++) all[i] = (unsigned char)(i & 255);
    check_hash(all, sizeof all, "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
    return th_report();
}
