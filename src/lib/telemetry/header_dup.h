/*
 * A header naming one column twice, or two columns that give one field (private, not
 * installed): which of the two is meant is ambiguous, and reading both would merge them
 * into one series (each row counted twice, a mean between them), so the header is refused
 * (pfi issue 14: never silently drop or merge data). Header parsing only: off the hot path.
 */
#ifndef PFI_TELEMETRY_HEADER_DUP_H
#define PFI_TELEMETRY_HEADER_DUP_H

#include <stdio.h>

#include "pfi/error.h"
#include "telemetry/internal.h"
#include "telemetry/span.h"

/*
 * Check the n columns of one header line. name[i]: column i's header text (trimmed);
 * field[i]: the field it gives (an index into tm->fields), SIZE_MAX when it gives none or
 * shares one by design (the clock event reason bits of one mask). col0: the header's
 * columns before name[0] (the message numbers columns from 1 on the header line). line: the
 * header's line, 0 for a field list given on the command line. value_only: compare only the columns
 * that give a field (a reader that tolerates its key columns repeated). PFI_OK when every name and
 * every field is given once; else PFI_ERR_PARSE with diag (may be NULL) set to the first pair, its
 * column the second one: "column name appears twice in the header", or "gives field F, as column
 * 'X' (column i) does".
 */
static inline pfi_error tm_header_twice(const pfi_telemetry *tm, const span *name,
                                        const size_t *field, size_t n, size_t col0, long line,
                                        bool value_only, pfi_diag *diag)
{
    for (size_t j = 1; j < n; j++) {
        span b = span_trim(name[j]);
        for (size_t i = 0; i < j; i++) {
            if (value_only && (field[i] == SIZE_MAX || field[j] == SIZE_MAX))
                continue;
            span a = span_trim(name[i]);
            bool same = a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
            bool shared = field != NULL && field[i] != SIZE_MAX && field[i] == field[j];
            if (!same && !shared)
                continue;
            if (diag != NULL) {
                int an = (int)(a.n > 100 ? 100 : a.n), bn = (int)(b.n > 100 ? 100 : b.n);
                diag->line = line;
                snprintf(diag->column, sizeof diag->column, "%.*s", bn, b.s);
                if (same) /* the wording of the replay CSV's and the jobs CSV's readers */
                    snprintf(diag->message, sizeof diag->message,
                             "column name appears twice in the header (columns %zu and %zu: "
                             "which one is meant is ambiguous; give each column once)",
                             col0 + i + 1, col0 + j + 1);
                else
                    snprintf(diag->message, sizeof diag->message,
                             "gives field %s, as column '%.*s' (column %zu) does: which one is "
                             "meant is ambiguous; give one of them (column %zu)",
                             tm->fields[field[j]].name, an, a.s, col0 + i + 1, col0 + j + 1);
            }
            return PFI_ERR_PARSE;
        }
    }
    return PFI_OK;
}

#endif
