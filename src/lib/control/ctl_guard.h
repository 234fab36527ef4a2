/*
 * What the controller trusts (src/lib/control/guard.c; DESIGN §10): a power reading is used
 * only while it is fresh (its sample time within the stale bound) and physically possible,
 * and the feedback correction integrates only while the caps are confirmed and the power
 * has settled (anti-windup). Internal; pure functions of their arguments, no clock read.
 */
#ifndef PFI_CTL_GUARD_H
#define PFI_CTL_GUARD_H

#include <stdbool.h>

/* What a reading is. */
typedef enum ctl_reading {
    CTL_READING_OK = 0,
    CTL_READING_MISSING = 1, /* no value (NaN) or no sample time */
    CTL_READING_STALE = 2,   /* older than the stale bound */
    CTL_READING_GLITCH = 3   /* negative, not finite, or above the physical limit */
} ctl_reading;

/* "ok", "missing", "stale", "glitch". Static. */
const char *ctl_reading_name(ctl_reading r);

/* How far above a GPU's largest settable cap a reading may be before it is a glitch: a GPU
 * draws transients above its limit, never an average of 1.5 × it over a second. */
#define CTL_GLITCH_FACTOR 1.5

/* ctl_reading_check — the verdict on one GPU's power reading w (W) sampled at sample_t_s,
 * read at now_s (both Unix s), against stale_after_s (s) and the GPU's max_cap_w (W; NaN:
 * only negative or infinite readings are glitches). A sample time a little in the future
 * (clock skew up to stale_after_s) is fresh. */
ctl_reading ctl_reading_check(double w, double sample_t_s, double now_s, double stale_after_s,
                              double max_cap_w);

/* The feedback correction with anti-windup. */
typedef struct ctl_feedback {
    double correction_w;      /* in force (W) */
    double last_measured_w;   /* the previous period's managed measured power (NaN none) */
    unsigned settled_periods; /* periods in a row the power has moved less than the tolerance */
} ctl_feedback;

/* One period's inputs to the integrator. */
typedef struct ctl_feedback_in {
    bool event;          /* a budget is in force */
    bool caps_confirmed; /* every cap request of the last period confirmed */
    unsigned quiet;      /* periods since the caps last changed */
    bool readings_fresh; /* every managed GPU had an OK reading */
    double measured_w;   /* managed GPUs' measured power (W) */
    double predicted_w;  /* the curves' prediction for them at the confirmed caps (W) */
    double scale_w;      /* the budget (W): bounds and tolerances are fractions of it */
    double gain;         /* share of the error fed back */
    double bound;        /* correction <= bound × scale */
    double lower;        /* correction >= −lower × scale */
    double settle_tol;   /* power settled: |Δ measured| <= settle_tol × scale (0.01) */
} ctl_feedback_in;

/* ctl_feedback_update — the correction after one period. Outside an event it decays by half
 * a period (and the settle history is forgotten). During one it moves gain × ((measured
 * − predicted) − correction) towards the curves' error (predicted is at caps chosen with the
 * correction taken off: the error alone, which an integrator would run on to the bound) only
 * when the caps are confirmed and unchanged for two periods, every reading
 * is fresh, and the measured power has settled (moved by at most settle_tol × scale since
 * the last period, two periods in a row): a power that still follows a cap change (a lag)
 * is not a model error. One period's step is at most bound/4 × scale (a reading that got
 * through cannot throw the correction to its ceiling at once). Returns true when it
 * integrated. */
bool ctl_feedback_update(ctl_feedback *f, const ctl_feedback_in *in);

#endif
