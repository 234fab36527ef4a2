#define _GNU_SOURCE /* strtod_l, newlocale */
#include "pfi/value.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The C locale object is created once, on first use, and shared by all threads. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void trim(const char **text, size_t *len)
{
    while (*len > 0 && is_blank(**text)) {
        (*text)++;
        (*len)--;
    }
    while (*len > 0 && is_blank((*text)[*len - 1]))
        (*len)--;
}

static int equals(const char *text, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

bool pfi_value_is_missing_token(const char *text, size_t len)
{
    trim(&text, &len);
    if (len == 0)
        return true;
    if (text[0] == '[' && text[len - 1] == ']')
        return true;
    /* DCGM's string blanks: "<<<NULL>>>", "<<<NOT_FOUND>>>", "<<<NOT_SUPPORTED>>>",
     * "<<<NOT_PERM>>>" (dcgm_structs.h DCGM_STR_IS_BLANK). */
    if (len >= 6 && memcmp(text, "<<<", 3) == 0 && memcmp(text + len - 3, ">>>", 3) == 0)
        return true;
    /* dcgmi's N/W (not watched) and N/S, nvidia-smi's ERR! (a failed read). */
    static const char *const words[] = {"N/A",  "NA",   "n/a", "NaN", "nan", "-NaN", "-nan",
                                        "+NaN", "+nan", "-",   "N/W", "N/S", "ERR!"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (equals(text, len, words[i]))
            return true;
    return false;
}

pfi_value_status pfi_value_parse(const char *text, size_t len, double *out)
{
    *out = NAN;
    trim(&text, &len);
    if (pfi_value_is_missing_token(text, len))
        return PFI_VALUE_MISSING;
    char buf[4096];
    if (len >= sizeof buf)
        return PFI_VALUE_INVALID;
    memcpy(buf, text, len);
    buf[len] = '\0';
    /* Only plain decimal numbers: strtod would also take hex floats and "infinity". */
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return PFI_VALUE_INVALID;
    }
    pthread_once(&c_locale_once, c_locale_init);
    if (c_locale == (locale_t)0)
        return PFI_VALUE_INVALID;
    char *end = NULL;
    double v = strtod_l(buf, &end, c_locale);
    if (end == buf || *end != '\0' || !isfinite(v))
        return PFI_VALUE_INVALID;
    *out = v;
    return PFI_VALUE_OK;
}

pfi_value_status pfi_reduction_parse(const char *text, double *fraction, char *why, size_t wlen)
{
    static const char both[] = "a fraction in [0, 1] (0.3) or a percentage (30%)";
    *fraction = NAN;
    size_t len = text != NULL ? strlen(text) : 0;
    const char *t = text != NULL ? text : "";
    trim(&t, &len);
    bool percent = len > 0 && t[len - 1] == '%';
    double v;
    if (pfi_value_parse(t, len - percent, &v) != PFI_VALUE_OK) {
        if (why != NULL)
            snprintf(why, wlen, "'%.40s' is not a reduction: expected %s", text ? text : "", both);
        return PFI_VALUE_INVALID;
    }
    if (percent ? !(v >= 0 && v <= 100) : !(v >= 0)) {
        if (why != NULL)
            snprintf(why, wlen, "reduction '%.40s' is outside 0%%..100%%: expected %s",
                     text ? text : "", both);
        return PFI_VALUE_INVALID;
    }
    if (!percent && v > 1) {
        if (why != NULL)
            snprintf(why, wlen,
                     "reduction '%.40s' is ambiguous (a bare number above 1): write %g%% or %g "
                     "for %g percent (expected %s)",
                     text ? text : "", v, v / 100, v, both);
        return PFI_VALUE_INVALID;
    }
    *fraction = percent ? v / 100 : v;
    return PFI_VALUE_OK;
}
