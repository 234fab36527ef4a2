/*
 * What older cmocka lacks, for the tests that use it. Include after <cmocka.h>.
 */
#ifndef PFI_TESTS_CMOCKA_COMPAT_H
#define PFI_TESTS_CMOCKA_COMPAT_H

#include <math.h>

#ifndef assert_double_equal /* cmocka < 1.1.6 */
#define assert_double_equal(a, b, eps)                                                             \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (eps)))                                                             \
            fail_msg("%.17g != %.17g (tolerance %g)", a_, b_, (double)(eps));                      \
    } while (0)
#endif

#endif
