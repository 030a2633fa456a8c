/* A very small test framework for the C tests of libparley.
 *
 * Each test is a function; RUN(fn) runs it and prints "ok - fn" or
 * "not ok - fn". FINISH() prints "RESULT passed=P failed=F", which
 * bindings/c/tests/run.sh adds up, and returns the exit status. */
#ifndef PARLEY_TEST_CHECK_H
#define PARLEY_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#include "parley.h"

static int check_case_failed = 0;
static int check_passed = 0;
static int check_failed = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            check_case_failed = 1;                                                  \
        }                                                                           \
    } while (0)

/* Checks a result code, and on a mismatch shows both names and the message. */
#define CHECK_RC(expr, want)                                                          \
    do {                                                                              \
        parley_result check_rc_ = (expr);                                             \
        if (check_rc_ != (want)) {                                                    \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__,   \
                    __LINE__, #expr, parley_result_name(check_rc_),                   \
                    parley_result_name(want), parley_last_error());                   \
            check_case_failed = 1;                                                    \
        }                                                                             \
    } while (0)

#define CHECK_STR(got, want)                                                          \
    do {                                                                              \
        const char *check_got_ = (got);                                               \
        const char *check_want_ = (want);                                             \
        if (check_got_ == NULL || strcmp(check_got_, check_want_) != 0) {             \
            fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__,      \
                    __LINE__, #got, check_got_ ? check_got_ : "(null)", check_want_); \
            check_case_failed = 1;                                                    \
        }                                                                             \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                              \
    do {                                                                              \
        const char *check_hay_ = (haystack);                                          \
        if (check_hay_ == NULL || strstr(check_hay_, (needle)) == NULL) {             \
            fprintf(stderr, "%s:%d: %s is \"%s\", which lacks \"%s\"\n", __FILE__,   \
                    __LINE__, #haystack, check_hay_ ? check_hay_ : "(null)", needle); \
            check_case_failed = 1;                                                    \
        }                                                                             \
    } while (0)

#define RUN(fn)                                                  \
    do {                                                         \
        check_case_failed = 0;                                   \
        fn();                                                    \
        if (check_case_failed) {                                 \
            check_failed++;                                      \
            printf("not ok - %s\n", #fn);                        \
        } else {                                                 \
            check_passed++;                                      \
            printf("ok - %s\n", #fn);                            \
        }                                                        \
        fflush(stdout);                                          \
    } while (0)

#define FINISH()                                                               \
    (printf("RESULT passed=%d failed=%d\n", check_passed, check_failed),       \
     fflush(stdout), check_failed == 0 ? 0 : 1)

#endif /* PARLEY_TEST_CHECK_H */
