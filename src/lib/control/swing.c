/*
 * Power-swing figures of a measured power series (pfi/audit.h): largest ramp, dynamic
 * range, band oscillation energy through GSL's mixed-radix real FFT.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fft_real.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/audit.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The band energy of the uniform series y[m] (mean removed here) at step dt. */
static pfi_error band_energy(double *y, size_t m, double dt, pfi_power_swing *o)
{
    double mean = 0;
    for (size_t i = 0; i < m; i++)
        mean += y[i];
    mean /= (double)m;
    for (size_t i = 0; i < m; i++)
        y[i] -= mean;
    gsl_fft_real_wavetable *wt = gsl_fft_real_wavetable_alloc(m);
    gsl_fft_real_workspace *ws = gsl_fft_real_workspace_alloc(m);
    if (wt == NULL || ws == NULL) {
        gsl_fft_real_wavetable_free(wt);
        gsl_fft_real_workspace_free(ws);
        return PFI_ERR_NOMEM;
    }
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int rc = gsl_fft_real_transform(y, 1, m, wt, ws);
    gsl_set_error_handler(old);
    gsl_fft_real_wavetable_free(wt);
    gsl_fft_real_workspace_free(ws);
    if (rc != GSL_SUCCESS)
        return PFI_ERR_VALUE; /* GSL refused the transform (a NaN would be one) */
    /* halfcomplex: y[0] = X_0; for 0 < k < m/2, X_k = y[2k-1] + i y[2k]; for even m,
     * X_{m/2} = y[m-1]. Bin k stands for +f_k and (k != m/2) its mirror −f_k. */
    double e = 0, mm = (double)m;
    for (size_t k = 1; 2 * k <= m; k++) {
        double f = (double)k / (mm * dt);
        if (f < o->band_lo_hz || f > o->band_hi_hz)
            continue;
        if (2 * k == m)
            e += y[m - 1] * y[m - 1] / (mm * mm);
        else
            e += 2 * (y[2 * k - 1] * y[2 * k - 1] + y[2 * k] * y[2 * k]) / (mm * mm);
    }
    o->osc_energy_w2 = e;
    o->osc_rms_w = sqrt(e);
    return PFI_OK;
}

pfi_error pfi_power_swing_compute(const double *t_s, const double *w, size_t n, double band_lo_hz,
                                  double band_hi_hz, pfi_power_swing *o, pfi_diag *d)
{
    memset(o, 0, sizeof *o);
    o->dt_s = o->min_w = o->max_w = o->dynamic_range_w = o->max_ramp_w_per_s = NAN;
    o->osc_energy_w2 = o->osc_rms_w = o->band_hi_used_hz = NAN;
    o->band_lo_hz = band_lo_hz;
    o->band_hi_hz = band_hi_hz;
    if (!(band_lo_hz >= 0 && band_hi_hz > band_lo_hz))
        return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT, "swing: a band 0 <= lo < hi is needed");
    double *t = pfi_malloc((2 * n + 1) * sizeof *t);
    if (t == NULL)
        return PFI_ERR_NOMEM;
    double *p = t + n;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(t_s[i]) || !isfinite(w[i])) {
            o->n_missing++;
            continue;
        }
        if (m > 0 && !(t_s[i] > t[m - 1])) {
            double last = t[m - 1];
            pfi_free(t);
            return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT,
                            "swing: sample %zu's time %.6g s is not after the last (%.6g s)", i + 1,
                            t_s[i], last);
        }
        t[m] = t_s[i];
        p[m++] = w[i];
    }
    o->n = m;
    if (m < 2) {
        pfi_free(t);
        return ctl_fail(d, 0, PFI_ERR_EMPTY, "swing: fewer than 2 samples with a power");
    }
    o->min_w = o->max_w = p[0];
    o->max_ramp_w_per_s = 0;
    for (size_t i = 0; i < m; i++) {
        o->min_w = fmin(o->min_w, p[i]);
        o->max_w = fmax(o->max_w, p[i]);
        if (i > 0)
            o->max_ramp_w_per_s =
                fmax(o->max_ramp_w_per_s, fabs(p[i] - p[i - 1]) / (t[i] - t[i - 1]));
    }
    o->dynamic_range_w = o->max_w - o->min_w;
    /* the median step: the grid the series is resampled on */
    double *steps = pfi_malloc((m - 1) * sizeof *steps);
    if (steps == NULL) {
        pfi_free(t);
        return PFI_ERR_NOMEM;
    }
    for (size_t i = 1; i < m; i++)
        steps[i - 1] = t[i] - t[i - 1];
    qsort(steps, m - 1, sizeof *steps, cmp_double);
    double dt =
        (m - 1) % 2 ? steps[(m - 1) / 2] : 0.5 * (steps[(m - 1) / 2 - 1] + steps[(m - 1) / 2]);
    pfi_free(steps);
    o->dt_s = dt;
    double nyq = 0.5 / dt;
    o->band_hi_used_hz = fmin(band_hi_hz, nyq);
    pfi_error e = PFI_OK;
    size_t g = (size_t)floor((t[m - 1] - t[0]) / dt + 1e-9) + 1;
    if (m >= 4 && band_lo_hz <= nyq && g >= 4 && g <= (size_t)1 << 26) {
        double *y = pfi_malloc(g * sizeof *y);
        if (y == NULL) {
            pfi_free(t);
            return PFI_ERR_NOMEM;
        }
        size_t j = 0;
        for (size_t k = 0; k < g; k++) {
            double tk = t[0] + (double)k * dt;
            while (j + 2 < m && t[j + 1] <= tk)
                j++;
            double f = (tk - t[j]) / (t[j + 1] - t[j]);
            y[k] = p[j] + fmin(1, fmax(0, f)) * (p[j + 1] - p[j]);
        }
        e = band_energy(y, g, dt, o);
        pfi_free(y);
    }
    pfi_free(t);
    return e;
}
