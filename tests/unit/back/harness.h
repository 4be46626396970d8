/* harness.h - the few checks the back-end unit tests need; each test program ends with
 * return th_report(); which prints "N passed, N failed". */
#ifndef FUSEGEN_TEST_HARNESS_H
#define FUSEGEN_TEST_HARNESS_H
#include <stdio.h>
#include <string.h>

static int th_passed, th_failed;

#define TH_CHECK(cond)                                                                  \
    do {                                                                                \
        if (cond) {                                                                     \
            th_passed++;                                                                \
        } else {                                                                        \
            th_failed++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                               \
    } while (0)

/* Compares two strings and shows both when they differ. */
#define TH_STREQ(got, want)                                                             \
    do {                                                                                \
        const char *th_g_ = (got), *th_w_ = (want);                                     \
        if (th_g_ && th_w_ && strcmp(th_g_, th_w_) == 0) {                              \
            th_passed++;                                                                \
        } else {                                                                        \
            th_failed++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s == %s\n  got:  [%s]\n  want: [%s]\n", \
                    __FILE__, __LINE__, #got, #want, th_g_ ? th_g_ : "(null)",          \
                    th_w_ ? th_w_ : "(null)");                                          \
        }                                                                               \
    } while (0)

static int th_report(void)
{
    printf("%d passed, %d failed\n", th_passed, th_failed);
    return th_failed ? 1 : 0;
}

#endif
