/*
 * Pure helpers of the figure writers, without PLplot (so tests/test_plot.c checks them
 * directly): titles shortened so that the GPU model stays, a series split at missing values
 * into the runs that are drawn, the unit of a power axis, and a budget drawn as steps or
 * ramps. Not part of the public API.
 */
#ifndef PFI_PLOT_LAYOUT_H
#define PFI_PLOT_LAYOUT_H

#include <stddef.h>

/*
 * plot_short_title — t in at most keep characters (keep ≥ 12) into buf[len]: t itself when
 * it fits, else its first field (up to the first '+', '/', ':', ' ' or ','; in pfi's file
 * and key names the GPU model, "A40" of "A40+bert-base-uncased+gpu0.csv"; at most keep / 2
 * characters), "...", and as much of the end (the distinguishing key values) as fits:
 * "A40...-uncased+gpu0.csv". Cutting from the front alone lost the model, so that A40 and
 * V100 panels read alike. A t without a separator keeps its start and end.
 */
void plot_short_title(const char *t, size_t keep, char *buf, size_t len);

/*
 * plot_next_run — the next run of finite values of v[n] at or after *from: sets
 * [*begin, *end) and *from = *end, and returns 1; 0 when none is left. A line is drawn
 * through each run on its own, so a missing value (NaN) breaks it: it is never drawn as 0
 * nor bridged by a straight line.
 */
int plot_next_run(const double *v, size_t n, size_t *from, size_t *begin, size_t *end);

/*
 * plot_power_unit — the unit of a power axis whose largest value is max_w (W): "W" below
 * 10 kW (a GPU, a node), "kW" from 10 kW (a cluster) and "MW" from 10 MW, so that tick labels
 * read as plain numbers, never with a "(x10^4)" multiplier. Returns the unit's name and sets
 * *scale_w to its size in W (1, 1e3, 1e6); a non-finite max_w gives "W".
 */
const char *plot_power_unit(double max_w, double *scale_w);

/*
 * plot_budget_path — the polyline of a budget over one run of periods (no missing budget):
 * period i holds budget b[i] from t[i] to t[i + 1] (the last to t_end). A change that
 * belongs to a ramp — two or more changes in a row in the same direction, as a schedule's
 * linear ramp gives — is drawn as the straight line from one period's start to the next;
 * an isolated change is drawn as a step (vertical at the period's start). Writes at most
 * 2 n + 1 points into x, y and returns how many.
 */
size_t plot_budget_path(const double *t, const double *b, size_t n, double t_end, double *x,
                        double *y);

#endif
