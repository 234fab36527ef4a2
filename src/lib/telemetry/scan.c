/*
 * The out-of-line conversions behind scan.h: tm_parse_number, the general decimal path every
 * fast conversion falls back to, and tm_days_from_civil for the readers' dates.
 */
#include <stdbool.h>
#include <stdint.h>

#include "telemetry/internal.h"
#include "telemetry/scan.h"

/*
 * Fast path (Clinger): at most 15 significant digits and a decimal exponent within 22 give
 * an exactly representable mantissa and power of ten, so one multiply or divide is correctly
 * rounded. Anything else goes to pfi_value_parse (strtod_l in the C locale).
 */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out)
{
    while (len > 0 && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    size_t i = 0;
    bool neg = false;
    if (i < len && (text[i] == '-' || text[i] == '+')) {
        neg = text[i] == '-';
        i++;
    }
    uint64_t mant = 0;
    int digits = 0, frac = 0;
    bool any = false, dot = false;
    for (; i < len; i++) {
        char c = text[i];
        if (c >= '0' && c <= '9') {
            any = true;
            if (mant == 0 && c == '0') {
                if (dot)
                    frac++;
                continue;
            }
            if (++digits > 15)
                break;
            mant = mant * 10 + (uint64_t)(c - '0');
            if (dot)
                frac++;
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (i == len && any && frac <= 22) {
        double v = (double)mant / tm_pow10(frac);
        *out = neg ? -v : v;
        return PFI_VALUE_OK;
    }
    return pfi_value_parse(text, len, out);
}

bool tm_civil_valid(long y, unsigned m, unsigned d)
{
    static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= (unsigned)mdays[m - 1] + (unsigned)(m == 2 && leap);
}

long tm_days_from_civil(long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}
