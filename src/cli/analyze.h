/*
 * `pfi analyze` output writers (analyze_output.c), shared with analyze.c.
 */
#ifndef PFI_CLI_ANALYZE_H
#define PFI_CLI_ANALYZE_H

#include <stdbool.h>
#include <stdio.h>

#include "pfi/index.h"
#include "pfi/runs.h"

/* What the writers need besides the table and the results. */
typedef struct analyze_report {
    const pfi_runs_table *table;
    const pfi_result *results; /* table->n_groups */
    const pfi_options *options;
    bool show_points; /* table: list every point under its group */
} analyze_report;

/* A group's display title, e.g. "summary_power_a40.csv: cifar100/shufflenetv2/1024/adam". */
void analyze_group_title(const pfi_runs_table *t, size_t g, char *buf, size_t len);

/* Writers; false when a write failed or memory ran out (message already printed). */
bool analyze_write_table(FILE *f, const analyze_report *r);
bool analyze_write_csv(FILE *f, const analyze_report *r);
bool analyze_write_json(FILE *f, const analyze_report *r);

#endif
