/*
 * pfi schedule — what pfi control --schedule would run from a file: a text, CSV or JSON
 * power-target timeline, or the event a measured cluster power trace shows (pfi/grid.h).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/grid.h"
#include "pfi/memory.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi schedule [--speed N] [--format table|json] [-o FILE] FILE\n"
            "\n"
            "Print the grid events 'pfi control --schedule FILE' would run: start, end, ramp\n"
            "(seconds since --epoch) and target (a budget in W or a reduction of the reference\n"
            "power). FILE is one of:\n"
            "  text   lines 'START END TARGET [RAMP]', TARGET '30%%' or '5200W'\n"
            "  CSV    a header with start_s,end_s[,ramp_s] and budget_w, reduction_pct or\n"
            "         target (one per row)\n"
            "  JSON   {\"events\": [{\"start_s\": 0, \"end_s\": 600, \"ramp_s\": 60,\n"
            "         \"reduction_pct\": 25}]} (or budget_w, or target \"5200W\")\n"
            "  trace  a measured cluster power trace, header timestamp,total (W, one sample a\n"
            "         row; ISO 8601 or HH:MM): one event from the ramp's start to the hold's\n"
            "         end, the measured ramp, the reduction the trace held against its\n"
            "         pre-event level (e.g. data/emerald_phoenix_2025/SRP_total_power.csv)\n"
            "\n"
            "options:\n"
            "  --speed N            divide every time by N (60: a minute of the event a second);\n"
            "                       in [0.0001, 10000]. Event times end by 31536000 s (a year), a\n"
            "                       ramp within its event (ramp_s <= end_s - start_s).\n"
            "  --format table|json  (table)\n"
            "  -o, --output FILE    write there instead of stdout (atomically)\n"
            "  -h, --help           this help\n"
            "\n"
            "Exit codes: 0 success, 1 bad or missing input, 2 bad command line,\n"
            "3 output not written.\n");
}

static void target_text(const pfi_ctl_event *e, char *buf, size_t n)
{
    if (!isnan(e->reduction))
        snprintf(buf, n, "%.2f%%", 100 * e->reduction);
    else
        snprintf(buf, n, "%.0fW", e->budget_w);
}

static void write_table(FILE *f, const char *path, pfi_grid_schedule_form form,
                        const pfi_ctl_event *ev, size_t n, const pfi_grid_trace_info *ti,
                        double speed)
{
    fprintf(f, "schedule %s: %s, %zu event%s", path, pfi_grid_form_name(form), n,
            n == 1 ? "" : "s");
    if (speed != 1)
        fprintf(f, ", times / %g (--speed)", speed);
    fputc('\n', f);
    if (form == PFI_GRID_FORM_TRACE)
        fprintf(f,
                "trace: %zu samples; pre-event %.0f W, held %.0f W (reduction %.1f%%); ramp "
                "%.0f-%.0f s, hold until %.0f s, back at 90%% by %s s (trace time, unscaled)\n",
                ti->samples, ti->pre_event_w, ti->event_w, 100 * ti->reduction, ti->ramp_start_s,
                ti->hold_start_s, ti->hold_end_s, cli_num(ti->recovered_s, 'f', 0, "never").s);
    fprintf(f, "  %10s %10s %8s  %s\n", "start_s", "end_s", "ramp_s", "target");
    for (size_t i = 0; i < n; i++) {
        char t[64];
        target_text(&ev[i], t, sizeof t);
        fprintf(f, "  %10.3f %10.3f %8.3f  %s\n", ev[i].start_s, ev[i].end_s, ev[i].ramp_s, t);
    }
}

static void write_json(FILE *f, pfi_grid_schedule_form form, const pfi_ctl_event *ev, size_t n,
                       const pfi_grid_trace_info *ti, double speed)
{
    fprintf(f, "{\"form\": \"%s\", \"speed\": %.10g, \"events\": [", pfi_grid_form_name(form),
            speed);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n  {\"start_s\": %.10g, \"end_s\": %.10g, \"ramp_s\": %.10g, ", i ? "," : "",
                ev[i].start_s, ev[i].end_s, ev[i].ramp_s);
        fputs("\"budget_w\": ", f);
        cli_put_num(f, ev[i].budget_w, 10, "null");
        fputs(", \"reduction_pct\": ", f);
        cli_put_num(f, 100 * ev[i].reduction, 10, "null");
        fputs("}", f);
    }
    fputs("\n]", f);
    if (form == PFI_GRID_FORM_TRACE) {
        fprintf(f,
                ",\n\"trace\": {\"samples\": %zu, \"pre_event_w\": %.10g, \"event_w\": %.10g, "
                "\"reduction_pct\": %.10g, \"ramp_start_s\": %.10g, \"hold_start_s\": %.10g, "
                "\"hold_end_s\": %.10g, \"recovered_s\": ",
                ti->samples, ti->pre_event_w, ti->event_w, 100 * ti->reduction, ti->ramp_start_s,
                ti->hold_start_s, ti->hold_end_s);
        cli_put_num(f, ti->recovered_s, 10, "null");
        fputs(", \"first_unix_s\": ", f);
        cli_put_num(f, ti->first_unix_s, 13, "null");
        fputs("}", f);
    }
    fputs("}\n", f);
}

int cmd_schedule(int argc, char **argv)
{
    static const struct option opts[] = {{"speed", required_argument, NULL, 's'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    double speed = 1;
    const char *format = "table", *output = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        case 's':
            if (!cli_parse_double(optarg, &speed) || !(speed >= 1e-4) || !(speed <= 1e4)) {
                return cli_usage_bad_value("speed", optarg, "a number in [0.0001, 10000]");
            }
            break;
        case 'f':
            if (strcmp(optarg, "table") != 0 && strcmp(optarg, "json") != 0) {
                return cli_usage_bad_value("format", optarg, "table or json");
            }
            format = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        default: /* '?' or ':' */
            return cli_usage_getopt(opts, ":ho:", c, argv);
        }
    }
    if (argc - optind != 1) {
        cli_error("give one FILE (see 'pfi schedule --help')");
        return PFI_EXIT_USAGE;
    }
    const char *path = argv[optind];
    int orc = cli_output_not_input(output, path);
    if (orc != PFI_EXIT_OK)
        return orc;
    size_t len = 0;
    errno = 0;
    char *text = cli_read_text(path, 64u << 20, &len);
    if (text == NULL) {
        cli_error("%s: %s", path, cli_input_why());
        return PFI_EXIT_DATA;
    }
    pfi_ctl_event *ev = NULL;
    size_t n = 0;
    pfi_grid_schedule_form form;
    pfi_grid_trace_info ti;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_grid_schedule_load(text, len, &ev, &n, &form, &ti, &d);
    free(text);
    if (e != PFI_OK) {
        snprintf(d.file, sizeof d.file, "%s", path);
        return cli_report(e, &d);
    }
    pfi_grid_schedule_speed(ev, n, speed);
    cli_output out;
    int rc = PFI_EXIT_OK;
    if (!cli_output_open(&out, output)) {
        rc = PFI_EXIT_OUTPUT;
    } else {
        if (strcmp(format, "json") == 0)
            write_json(out.f, form, ev, n, &ti, speed);
        else
            write_table(out.f, path, form, ev, n, &ti, speed);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    pfi_free(ev);
    return rc;
}
