/*
 * Soft checks for table-driven cmocka tests: CHECK prints every failed expectation and keeps
 * going, so one failure neither hides the next nor skips the test's clean-up; END_CHECKS
 * fails the test at its end when any CHECK failed. Include after <cmocka.h>.
 */
#ifndef PFI_TESTS_CHECKS_H
#define PFI_TESTS_CHECKS_H

static int g_failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_error(__VA_ARGS__);                                                              \
            print_error("  (%s:%d)\n", __FILE__, __LINE__);                                        \
            g_failures++;                                                                          \
        }                                                                                          \
    } while (0)

#define END_CHECKS()                                                                               \
    do {                                                                                           \
        int n_failed_ = g_failures;                                                                \
        g_failures = 0;                                                                            \
        if (n_failed_ != 0)                                                                        \
            fail_msg("%d failed check(s), listed above", n_failed_);                               \
    } while (0)

#endif
