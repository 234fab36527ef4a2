/*
 * Pure layout helpers of the figures (plot/plot_layout.h): title shortening, runs of a
 * series between missing values, the power axis unit, budget steps and ramps.
 */
#include "plot/plot_layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void plot_short_title(const char *t, size_t keep, char *buf, size_t len)
{
    if (len == 0)
        return;
    size_t n = strlen(t);
    if (keep < 12)
        keep = 12;
    if (n <= keep) {
        snprintf(buf, len, "%s", t);
        return;
    }
    size_t head = strcspn(t, "+/:, ");
    if (head == n || head > keep / 2)
        head = keep / 3; /* no separator near the start: keep the start */
    size_t tail = keep - head - 3;
    snprintf(buf, len, "%.*s...%s", (int)head, t, t + n - tail);
}

int plot_next_run(const double *v, size_t n, size_t *from, size_t *begin, size_t *end)
{
    size_t i = *from;
    while (i < n && !isfinite(v[i]))
        i++;
    if (i >= n) {
        *from = n;
        return 0;
    }
    *begin = i;
    while (i < n && isfinite(v[i]))
        i++;
    *end = i;
    *from = i;
    return 1;
}

const char *plot_power_unit(double max_w, double *scale_w)
{
    double m = fabs(max_w);
    if (isfinite(m) && m >= 1e7) {
        *scale_w = 1e6;
        return "MW";
    }
    if (isfinite(m) && m >= 1e4) {
        *scale_w = 1e3;
        return "kW";
    }
    *scale_w = 1;
    return "W";
}

static int sign(double d)
{
    return (d > 0) - (d < 0);
}

size_t plot_budget_path(const double *t, const double *b, size_t n, double t_end, double *x,
                        double *y)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0) {
            x[m] = t[0];
            y[m++] = b[0];
            continue;
        }
        int s = sign(b[i] - b[i - 1]);
        if (s == 0)
            continue; /* the line runs on */
        int before = i >= 2 ? sign(b[i - 1] - b[i - 2]) : 0;
        int after = i + 1 < n ? sign(b[i + 1] - b[i]) : 0;
        if (s == before || s == after) { /* on a ramp: straight from the last start */
            if (m == 0 || x[m - 1] != t[i - 1]) {
                x[m] = t[i - 1];
                y[m++] = b[i - 1];
            }
            x[m] = t[i];
            y[m++] = b[i];
        } else { /* a step at t[i] */
            x[m] = t[i];
            y[m++] = b[i - 1];
            x[m] = t[i];
            y[m++] = b[i];
        }
    }
    x[m] = t_end;
    y[m++] = n > 0 ? b[n - 1] : NAN;
    return m;
}
