/*
 * The controller's trust in its inputs (control/ctl_guard.h): fresh, physically possible
 * readings, and a feedback integrator that winds up neither on a lagging power nor on a
 * glitch (anti-windup by conditional integration and a bounded step, Åström & Hägglund,
 * "Advanced PID Control", §3.5).
 */
#include <math.h>

#include "control/ctl_guard.h"

const char *ctl_reading_name(ctl_reading r)
{
    switch (r) {
    case CTL_READING_OK:
        return "ok";
    case CTL_READING_MISSING:
        return "missing";
    case CTL_READING_STALE:
        return "stale";
    case CTL_READING_GLITCH:
        return "glitch";
    }
    return "unknown";
}

ctl_reading ctl_reading_check(double w, double sample_t_s, double now_s, double stale_after_s,
                              double max_cap_w)
{
    if (isnan(w) || !isfinite(sample_t_s))
        return CTL_READING_MISSING;
    if (!isfinite(w) || w < 0)
        return CTL_READING_GLITCH;
    if (isfinite(max_cap_w) && max_cap_w > 0 && w > CTL_GLITCH_FACTOR * max_cap_w)
        return CTL_READING_GLITCH;
    double age = now_s - sample_t_s;
    if (!(age <= stale_after_s) || age < -stale_after_s)
        return CTL_READING_STALE;
    return CTL_READING_OK;
}

bool ctl_feedback_update(ctl_feedback *f, const ctl_feedback_in *in)
{
    if (!in->event) {
        f->correction_w *= 0.5; /* the correction is the event's: it fades out after it */
        if (fabs(f->correction_w) < 1)
            f->correction_w = 0;
        f->last_measured_w = NAN;
        f->settled_periods = 0;
        return false;
    }
    double scale = in->scale_w;
    if (!(scale > 0) || !isfinite(in->measured_w) || !isfinite(in->predicted_w) ||
        !in->readings_fresh) {
        f->settled_periods = 0; /* nothing trustworthy measured: hold */
        if (!in->readings_fresh)
            f->last_measured_w = NAN;
        return false;
    }
    double tol = (in->settle_tol > 0 ? in->settle_tol : 0.01) * scale;
    if (isfinite(f->last_measured_w) && fabs(in->measured_w - f->last_measured_w) <= tol)
        f->settled_periods++;
    else
        f->settled_periods = 0;
    f->last_measured_w = in->measured_w;
    if (!in->caps_confirmed || in->quiet < 2 || f->settled_periods < 2)
        return false;
    /* the correction follows the curves' error: the caps were chosen with the correction
     * already taken off, so measured − predicted is the curves' error alone; integrating it
     * (step = gain × error) would keep growing while the error stands, to the bound: a
     * strategy with curves 40 W off drew 1.2 % more than one with exact curves */
    double step = in->gain * ((in->measured_w - in->predicted_w) - f->correction_w);
    double max_step = 0.25 * in->bound * scale;
    step = fmin(max_step, fmax(-max_step, step));
    double hi = in->bound * scale, lo = -in->lower * scale;
    f->correction_w = fmin(hi, fmax(lo, f->correction_w + step));
    return true;
}
