/*
 * libFuzzer harness: the kernel-log reader (pfi/kernlog.h) on arbitrary bytes, then the
 * correlation with a two-GPU run whose bus ids are known (case-03's), and the bus-id
 * normaliser on the raw bytes. Invariants (abort() when one fails): at most
 * PFI_KERNLOG_MAX_EVENTS events; every text field NUL-terminated inside its array, without control
 * bytes in a message; a bus id empty or exactly "dddd:bb:dd.f" in lower-case hex; counts >= 1,
 * lines >= 1, file indices in range; a match's entity a GPU with the same bus, or -1; a GPU
 * the correlation marked lost is a GPU with a fatal event; a read refused as PFI_ERR_PARSE (an
 * NVIDIA line's timestamp is no time of the calendar) names its line and says "is not a valid
 * time".
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/kernlog.h"

static const char run_csv[] = "timestamp, index, pci.bus_id, power.draw [W]\n"
                              "2025/11/02 14:20:01.004, 0, 00000000:1B:00.0, 301.22 W\n"
                              "2025/11/02 14:20:01.009, 1, 00000000:3D:00.0, 297.80 W\n";

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool terminated(const char *s, size_t len)
{
    return memchr(s, '\0', len) != NULL;
}

static bool bus_form(const char *b)
{
    if (b[0] == '\0')
        return true;
    if (strlen(b) != 12 || b[4] != ':' || b[7] != ':' || b[10] != '.')
        return false;
    for (size_t i = 0; i < 12; i++) {
        if (i == 4 || i == 7 || i == 10)
            continue;
        char c = b[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return b[11] <= '7';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char bus[PFI_KERNLOG_BUS_LEN];
    if (pfi_kernlog_bus_normalize((const char *)data, size, bus))
        check(bus_form(bus) && bus[0] != '\0');
    else
        check(bus[0] == '\0');

    FILE *f = fuzz_stream_or_empty(data, size);
    if (f == NULL)
        return 0;
    pfi_kernlog *kl = NULL;
    if (pfi_kernlog_create(&kl) != PFI_OK) {
        fclose(f);
        return 0;
    }
    pfi_diag d;
    pfi_error e = pfi_kernlog_read_stream(kl, f, "fuzz", &d);
    fclose(f);
    /* a wall-clock stamp that is no time refuses the log on its line, saying so */
    check(e == PFI_OK || e == PFI_ERR_NOMEM || e == PFI_ERR_PARSE);
    if (e == PFI_ERR_PARSE)
        check(d.line >= 1 && strstr(d.message, "is not a valid time") != NULL);
    check(kl->n_events <= PFI_KERNLOG_MAX_EVENTS && kl->n_files == 1);
    check(kl->n_malformed_noted <= PFI_KERNLOG_MAX_NOTED);
    for (size_t i = 0; i < kl->n_events; i++) {
        const pfi_kernlog_event *ev = &kl->events[i];
        check(ev->xid >= 0 && ev->count >= 1 && ev->line >= 1 && ev->last_line >= ev->line);
        check(ev->file < kl->n_files && ev->last_file < kl->n_files);
        check(terminated(ev->bus, sizeof ev->bus) && bus_form(ev->bus));
        check(terminated(ev->bus_text, sizeof ev->bus_text));
        check(terminated(ev->time, sizeof ev->time));
        check(terminated(ev->last_time, sizeof ev->last_time));
        check(terminated(ev->message, sizeof ev->message));
        for (const char *p = ev->message; *p != '\0'; p++)
            check((unsigned char)*p >= 0x20 && *p != 0x7f);
        check(ev->xid != 0 || ev->bus[0] != '\0'); /* a notice always names its GPU */
    }

    pfi_telemetry_options o = {.keep_series = true};
    pfi_telemetry *tm = NULL;
    FILE *c = fmemopen((void *)run_csv, sizeof run_csv - 1, "rb");
    if (c != NULL && pfi_telemetry_create(&o, &tm) == PFI_OK &&
        pfi_telemetry_read_stream(tm, c, "run", PFI_TELEMETRY_AUTO, &d) == PFI_OK) {
        pfi_kernlog_match *m = calloc(kl->n_events + 1, sizeof *m);
        size_t matched = 0;
        if (m != NULL && pfi_kernlog_apply(kl, tm, NULL, 0, m, &matched) == PFI_OK) {
            size_t n_match = 0;
            bool fatal_on[2] = {false, false};
            for (size_t i = 0; i < kl->n_events; i++) {
                check(m[i].entity >= -1 && m[i].entity < (long)tm->n_entities);
                check(m[i].fatal == pfi_kernlog_is_fatal(&kl->events[i], NULL, 0));
                if (m[i].entity < 0) {
                    check(!m[i].marked);
                    continue;
                }
                n_match++;
                check(strcmp(kl->events[i].bus,
                             m[i].entity == 0 ? "0000:1b:00.0" : "0000:3d:00.0") == 0);
                fatal_on[m[i].entity] |= m[i].fatal;
                check(!m[i].marked || m[i].fatal);
            }
            check(n_match == matched);
            for (size_t g = 0; g < 2; g++)
                check(tm->entities[g].lost == fatal_on[g]);
            pfi_telemetry_summarize(tm);
            pfi_reduced red;
            pfi_reduce_options ro;
            pfi_reduce_options_init(&ro);
            if (pfi_reduce_power(tm, &ro, &red) == PFI_OK)
                check(((red.flags & PFI_RED_GPU_LOST) != 0) == (fatal_on[0] || fatal_on[1]));
        }
        free(m);
    }
    if (c != NULL)
        fclose(c);
    pfi_telemetry_destroy(tm);
    pfi_kernlog_destroy(kl);
    return 0;
}
