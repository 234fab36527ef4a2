/*
 * The kernel-log reader (pfi/kernlog.h): every dmesg / journalctl / syslog form, bus id
 * spellings, continuation lines, merging, garbage, over-long lines, an empty file; then the
 * correlation with case-03's telemetry (tests/cases/case-03, EXPECTED.md item 6).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks.h"
#include "pfi/kernlog.h"
#include "pfi/reduce.h"
#include "pfi/telemetry.h"

#ifndef PFI_CASES
#error "PFI_CASES (the field-report cases directory) is set by tests/CMakeLists.txt"
#endif

static char path_buf[1024];
static const char *cp(const char *rel)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", PFI_CASES, rel);
    return path_buf;
}

/* text (NUL-terminated, or n bytes when n > 0) read as one kernel log. */
static pfi_kernlog *read_text(const char *text, size_t n)
{
    if (n == 0)
        n = strlen(text);
    pfi_kernlog *kl = NULL;
    assert_int_equal(pfi_kernlog_create(&kl), PFI_OK);
    FILE *f = fmemopen((void *)text, n, "rb");
    assert_non_null(f);
    pfi_diag d;
    assert_int_equal(pfi_kernlog_read_stream(kl, f, "log", &d), PFI_OK);
    fclose(f);
    return kl;
}

/* One line (or a few) -> the first event, field by field; "-" for a field not checked. */
typedef struct line_case {
    const char *what;
    const char *text;
    size_t n_events;
    int xid;
    const char *bus, *bus_text, *time;
    pfi_kernlog_clock clock;
    const char *message;
    size_t count;
    bool fatal;
} line_case;

static const line_case line_cases[] = {
    {"dmesg", "[ 8123.441915] NVRM: Xid (PCI:0000:3d:00): 79, GPU has fallen off the bus.\n", 1, 79,
     "0000:3d:00.0", "PCI:0000:3d:00", "[ 8123.441915]", PFI_KERNLOG_CLOCK_BOOT,
     "GPU has fallen off the bus.", 1, true},
    {"dmesg -T, upper case bus, pid/name fields",
     "[Sun Nov  2 14:20:03 2025] NVRM: Xid (PCI:0000:3D:00): 79, pid='<unknown>', "
     "name=<unknown>, GPU has fallen off the bus.\n",
     1, 79, "0000:3d:00.0", "PCI:0000:3D:00", "[Sun Nov  2 14:20:03 2025]", PFI_KERNLOG_CLOCK_WALL,
     "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", 1, true},
    {"journalctl -k",
     "Nov 02 14:20:03 node7 kernel: NVRM: Xid (PCI:0000:cb:00): 13, pid=4242, name=python, "
     "Graphics SM Warp Exception on (GPC 7, TPC 1, SM 0)\n",
     1, 13, "0000:cb:00.0", "-", "Nov 02 14:20:03", PFI_KERNLOG_CLOCK_WALL,
     "pid=4242, name=python, Graphics SM Warp Exception on (GPC 7, TPC 1, SM 0)", 1, false},
    {"syslog with the dmesg stamp, old driver without PCI:",
     "May  6 00:38:27 node3 kernel: [ 4909.922970] NVRM: Xid (0000:01:00): 13, 0005 00000000\n", 1,
     13, "0000:01:00.0", "0000:01:00", "May  6 00:38:27 [ 4909.922970]", PFI_KERNLOG_CLOCK_WALL,
     "0005 00000000", 1, false},
    {"journalctl -o short-iso",
     "2025-11-02T14:20:03+0100 node7 kernel: NVRM: Xid (PCI:0000:3d:00): 95, Uncontained\n", 1, 95,
     "0000:3d:00.0", "-", "2025-11-02T14:20:03+0100", PFI_KERNLOG_CLOCK_WALL, "Uncontained", 1,
     true},
    {"journalctl -o short-full",
     "Sun 2025-11-02 14:20:03 CET node7 kernel: NVRM: Xid (PCI:0000:3d:00): 94, Contained\n", 1, 94,
     "0000:3d:00.0", "-", "Sun 2025-11-02 14:20:03 CET", PFI_KERNLOG_CLOCK_WALL, "Contained", 1,
     true},
    {"journalctl -o short-monotonic",
     "[ 8123.441915] node7 kernel: NVRM: Xid (PCI:0000:3d:00): 74, NVLink\n", 1, 74, "0000:3d:00.0",
     "-", "[ 8123.441915]", PFI_KERNLOG_CLOCK_BOOT, "NVLink", 1, true},
    {"dmesg --time-format iso",
     "2025-11-02T14:20:03,441915+01:00 NVRM: Xid (PCI:0000:3d:00): 48, DBE\n", 1, 48,
     "0000:3d:00.0", "-", "2025-11-02T14:20:03,441915+01:00", PFI_KERNLOG_CLOCK_WALL, "DBE", 1,
     true},
    {"dmesg -x", "kern  :warn  : [ 8123.441915] NVRM: Xid (PCI:0000:3d:00): 79, gone\n", 1, 79,
     "0000:3d:00.0", "-", "[ 8123.441915]", PFI_KERNLOG_CLOCK_BOOT, "gone", 1, true},
    {"pdsh prefix", "node7: [ 8123.4] NVRM: Xid (PCI:0000:3d:00): 79, gone\n", 1, 79,
     "0000:3d:00.0", "-", "[ 8123.4]", PFI_KERNLOG_CLOCK_BOOT, "gone", 1, true},
    {"no timestamp, no message", "NVRM: Xid (PCI:0000:3d:00): 79\n", 1, 79, "0000:3d:00.0", "-", "",
     PFI_KERNLOG_CLOCK_NONE, "", 1, true},
    {"bare kernel: prefix", "kernel: NVRM: Xid (PCI:0000:3d:00): 79, x\n", 1, 79, "0000:3d:00.0",
     "-", "", PFI_KERNLOG_CLOCK_NONE, "x", 1, true},
    {"8-digit domain", "NVRM: Xid (PCI:00000000:3D:00): 79, x\n", 1, 79, "0000:3d:00.0", "-", "-",
     PFI_KERNLOG_CLOCK_NONE, "x", 1, true},
    {"function given, short domain", "NVRM: Xid (PCI:1:AB:1F.3): 62, halt\n", 1, 62, "0001:ab:1f.3",
     "-", "-", PFI_KERNLOG_CLOCK_NONE, "halt", 1, true},
    {"CRLF", "[ 1.5] NVRM: Xid (PCI:0000:3d:00): 64, row remap failure\r\n", 1, 64, "0000:3d:00.0",
     "-", "[ 1.5]", PFI_KERNLOG_CLOCK_BOOT, "row remap failure", 1, true},
    {"unplaceable bus id (very old driver)", "NVRM: Xid (0009:00): 53, CMDre 00000000\n", 1, 53, "",
     "0009:00", "-", PFI_KERNLOG_CLOCK_NONE, "CMDre 00000000", 1, false},
    {"row remapping recorded: not fatal",
     "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
     "reset gpu to activate.\n",
     1, 63, "0000:10:1c.0", "-", "-", PFI_KERNLOG_CLOCK_NONE, "-", 1, false},
    {"Xid 154 asking for a reset, wrapped onto a continuation line",
     "[30709.1] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed\n"
     "                from 0x0 (None) to 0x1 (GPU Reset Required)\n",
     1, 154, "0000:01:00.0", "-", "[30709.1]", PFI_KERNLOG_CLOCK_BOOT,
     "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", 1, true},
    {"Xid 154 back to None",
     "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
     "Required) to 0x0 (None)\n",
     1, 154, "-", "-", "-", PFI_KERNLOG_CLOCK_NONE, "-", 1, false},
    {"notice, current drivers", "[ 9.0] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n", 1,
     0, "0000:2b:00.0", "0000:2b:00.0", "[ 9.0]", PFI_KERNLOG_CLOCK_BOOT,
     "GPU 0000:2b:00.0: GPU has fallen off the bus.", 1, true},
    {"notice, old drivers",
     "Sep 18 20:58:08 node5 kernel: [ 1936.510073] NVRM: GPU at 0000:01:00.0 has fallen off the "
     "bus.\n",
     1, 0, "0000:01:00.0", "-", "Sep 18 20:58:08 [ 1936.510073]", PFI_KERNLOG_CLOCK_WALL, "-", 1,
     true},
    {"the same Xid three times: one event",
     "[ 1.0] NVRM: Xid (PCI:0000:3d:00): 13, first\n"
     "[ 2.0] NVRM: Xid (PCI:0000:3D:00): 13, second\n"
     "[ 3.0] NVRM: Xid (PCI:00000000:3d:00): 13, third\n",
     1, 13, "0000:3d:00.0", "-", "[ 1.0]", PFI_KERNLOG_CLOCK_BOOT, "first", 3, false},
    {"other driver lines are not events",
     "NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae\n"
     "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
     "nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 32\n"
     "pcieport 0000:3c:00.0: AER: Uncorrectable (Fatal) error received: 0000:3d:00.0\n",
     0, 0, "-", "-", "-", PFI_KERNLOG_CLOCK_NONE, "-", 0, false},
};

static void line_forms(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof line_cases / sizeof line_cases[0]; i++) {
        const line_case *c = &line_cases[i];
        pfi_kernlog *kl = read_text(c->text, 0);
        CHECK(kl->n_events == c->n_events, "%s: %zu events, want %zu\n", c->what, kl->n_events,
              c->n_events);
        if (kl->n_events > 0 && c->n_events > 0) {
            const pfi_kernlog_event *ev = &kl->events[0];
            CHECK(ev->xid == c->xid, "%s: xid %d, want %d\n", c->what, ev->xid, c->xid);
            if (strcmp(c->bus, "-") != 0)
                CHECK(strcmp(ev->bus, c->bus) == 0, "%s: bus '%s', want '%s'\n", c->what, ev->bus,
                      c->bus);
            if (strcmp(c->bus_text, "-") != 0)
                CHECK(strcmp(ev->bus_text, c->bus_text) == 0, "%s: bus_text '%s', want '%s'\n",
                      c->what, ev->bus_text, c->bus_text);
            if (strcmp(c->time, "-") != 0) {
                CHECK(strcmp(ev->time, c->time) == 0, "%s: time '%s', want '%s'\n", c->what,
                      ev->time, c->time);
                CHECK(ev->clock == c->clock, "%s: clock %d, want %d\n", c->what, ev->clock,
                      c->clock);
            }
            if (strcmp(c->message, "-") != 0)
                CHECK(strcmp(ev->message, c->message) == 0, "%s: message '%s', want '%s'\n",
                      c->what, ev->message, c->message);
            CHECK(ev->count == c->count, "%s: count %zu, want %zu\n", c->what, ev->count, c->count);
            CHECK(pfi_kernlog_is_fatal(ev, NULL, 0) == c->fatal, "%s: fatal %d, want %d\n", c->what,
                  pfi_kernlog_is_fatal(ev, NULL, 0), c->fatal);
            CHECK(ev->line == 1 && ev->file == 0, "%s: line %ld file %zu\n", c->what, ev->line,
                  ev->file);
        }
        pfi_kernlog_destroy(kl);
    }
    END_CHECKS();
}

/* The case file: an Xid line, then a notice whose text continues on two indented lines. */
static void case03_file(void **state)
{
    (void)state;
    pfi_kernlog *kl = NULL;
    assert_int_equal(pfi_kernlog_create(&kl), PFI_OK);
    pfi_diag d;
    assert_int_equal(pfi_kernlog_read_file(kl, cp("case-03/dmesg_excerpt.txt"), &d), PFI_OK);
    assert_int_equal(kl->n_lines, 4);
    assert_int_equal(kl->n_events, 2);
    assert_int_equal(kl->n_xid_lines, 1);
    assert_int_equal(kl->n_notice_lines, 1);
    assert_int_equal(kl->n_continuation, 2);
    assert_int_equal(kl->n_ignored + kl->n_nvrm_other + kl->n_malformed + kl->n_too_long, 0);
    const pfi_kernlog_event *x = &kl->events[0], *n = &kl->events[1];
    assert_int_equal(x->xid, 79);
    assert_string_equal(x->bus, "0000:3d:00.0");
    assert_string_equal(x->time, "[ 8123.441915]");
    assert_int_equal(x->clock, PFI_KERNLOG_CLOCK_BOOT);
    assert_string_equal(x->message, "GPU has fallen off the bus.");
    assert_int_equal(n->xid, 0);
    assert_string_equal(n->bus, "0000:3d:00.0");
    assert_string_equal(n->time, "[ 8123.452100]");
    assert_int_equal(n->line, 2);
    assert_string_equal(n->message, "The NVIDIA GPU 0000:3d:00.0 (PCI ID: 10de:20b2) installed "
                                    "in this system has fallen off the bus and is not "
                                    "responding to commands.");
    assert_true(pfi_kernlog_is_fatal(x, NULL, 0));
    assert_true(pfi_kernlog_is_fatal(n, NULL, 0));
    assert_string_equal(kl->files[0], cp("case-03/dmesg_excerpt.txt"));
    pfi_kernlog_destroy(kl);
}

/* Continuations belong to the record above them, whatever it is; a blank line ends it. */
static void continuations(void **state)
{
    (void)state;
    pfi_kernlog *kl =
        read_text("[ 1.0] NVRM: Xid (PCI:0000:3d:00): 119, Timeout after 6s\n"
                  "               NVRM: of waiting for RPC response\n"
                  "\t\tfrom GPU1 GSP!\n"
                  "[ 2.0] usb 1-1: new device\n"
                  "               continued usb text\n"
                  "\n"
                  "               NVRM: Xid (PCI:0000:5e:00): 79, indented first line\n",
                  0);
    assert_int_equal(kl->n_events, 2);
    assert_string_equal(kl->events[0].message,
                        "Timeout after 6s of waiting for RPC response from GPU1 GSP!");
    assert_int_equal(kl->n_continuation, 2);
    assert_int_equal(kl->n_ignored, 2); /* the usb line and its continuation */
    assert_int_equal(kl->events[1].xid, 79);
    assert_int_equal(kl->events[1].line, 7);
    assert_string_equal(kl->events[1].bus, "0000:5e:00.0");
    pfi_kernlog_destroy(kl);
}

/* Garbage is counted, never an event, never a crash; control bytes never reach a message. */
static void garbage(void **state)
{
    (void)state;
    static const char text[] = "NVRM: Xid (\n"
                               "NVRM: Xid (PCI:0000:3d:00): abc, pid=2280636\n"
                               "NVRM: Xid (PCI:0000:3d:00) 79, no colon\n"
                               "NVRM: Xid (PCI:0000:3d:00): 0, zero\n"
                               "NVRM: Xid (PCI:0000:3d:00): 12345678, too many digits\n"
                               "NVRM: Xid (43, pid: 5678): ROBUST_CHANNEL\n"
                               "\x01\x02\xff\xfe garbage ]]][[[ :::\n"
                               "[ 5.0] NVRM: Xid (PCI:zz:yy:xx): 79, bad \x1b[31mbus\x07\n"
                               "NVRM:\n"
                               "[\n"
                               "NVRM: Xid";
    pfi_kernlog *kl = read_text(text, sizeof text - 1);
    assert_int_equal(kl->n_malformed, 7);
    assert_int_equal(kl->n_malformed_noted, 7);
    assert_int_equal(kl->malformed_line[0], 1);
    assert_int_equal(kl->malformed_line[6], 11);
    assert_int_equal(kl->n_events, 1); /* the Xid with the unreadable bus: kept, unplaceable */
    assert_string_equal(kl->events[0].bus, "");
    assert_string_equal(kl->events[0].bus_text, "PCI:zz:yy:xx");
    assert_string_equal(kl->events[0].message, "bad ?[31mbus?");
    assert_int_equal(kl->n_ignored, 2);
    assert_int_equal(kl->n_nvrm_other, 1);
    assert_int_equal(kl->n_lines, 11);
    pfi_kernlog_destroy(kl);

    /* A NUL inside a line. */
    static const char nul[] = "[ 1.0] NVRM: Xid (PCI:0000:3d:00): 79, a\0b\n";
    kl = read_text(nul, sizeof nul - 1);
    assert_int_equal(kl->n_events, 1);
    assert_string_equal(kl->events[0].message, "a?b");
    pfi_kernlog_destroy(kl);
}

/* A line longer than PFI_KERNLOG_MAX_LINE is skipped (counted), the next one still read; one of
 * exactly PFI_KERNLOG_MAX_LINE bytes is a line; a message is cut at PFI_KERNLOG_MSG_LEN - 1. */
static void long_lines(void **state)
{
    (void)state;
    const char *xid = "[ 1.0] NVRM: Xid (PCI:0000:3d:00): 79, ";
    size_t big = 3 * PFI_KERNLOG_MAX_LINE + 7;
    char *text = malloc(2 * big + 256);
    assert_non_null(text);
    /* 1: an over-long Xid line; 2: a good one; 3: an over-long line without a newline. */
    size_t n = 0;
    memcpy(text + n, xid, strlen(xid));
    n += strlen(xid);
    memset(text + n, 'a', big);
    n += big;
    text[n++] = '\n';
    n += (size_t)snprintf(text + n, 128, "[ 2.0] NVRM: Xid (PCI:0000:5e:00): 48, DBE\n");
    memset(text + n, 'b', big);
    n += big;
    pfi_kernlog *kl = read_text(text, n);
    assert_int_equal(kl->n_too_long, 2);
    assert_int_equal(kl->n_lines, 3);
    assert_int_equal(kl->n_events, 1);
    assert_int_equal(kl->events[0].xid, 48);
    assert_int_equal(kl->events[0].line, 2);
    pfi_kernlog_destroy(kl);

    /* Exactly PFI_KERNLOG_MAX_LINE bytes: read; its message is cut. */
    n = 0;
    memcpy(text, xid, strlen(xid));
    n = strlen(xid);
    memset(text + n, 'c', PFI_KERNLOG_MAX_LINE - n);
    n = PFI_KERNLOG_MAX_LINE;
    text[n++] = '\n';
    kl = read_text(text, n);
    assert_int_equal(kl->n_too_long, 0);
    assert_int_equal(kl->n_events, 1);
    assert_true(kl->events[0].message_cut);
    assert_int_equal(strlen(kl->events[0].message), PFI_KERNLOG_MSG_LEN - 1);
    pfi_kernlog_destroy(kl);

    /* PFI_KERNLOG_MAX_LINE + 1 bytes: skipped. */
    memset(text + strlen(xid), 'c', PFI_KERNLOG_MAX_LINE + 1 - strlen(xid));
    text[PFI_KERNLOG_MAX_LINE + 1] = '\n';
    kl = read_text(text, PFI_KERNLOG_MAX_LINE + 2);
    assert_int_equal(kl->n_too_long, 1);
    assert_int_equal(kl->n_events, 0);
    pfi_kernlog_destroy(kl);
    free(text);
}

/* An empty file, a missing file, and several files into one collector. */
static void files(void **state)
{
    (void)state;
    pfi_kernlog *kl = NULL;
    assert_int_equal(pfi_kernlog_create(&kl), PFI_OK);
    pfi_diag d;
    char tmp[] = "/tmp/pfi_kernlog_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(pfi_kernlog_read_file(kl, tmp, &d), PFI_OK);
    assert_int_equal(kl->n_lines, 0);
    assert_int_equal(kl->n_events, 0);
    remove(tmp);
    assert_int_equal(pfi_kernlog_read_file(kl, "/nonexistent/dmesg.txt", &d), PFI_ERR_IO);
    assert_string_equal(d.file, "/nonexistent/dmesg.txt");
    assert_non_null(strstr(d.message, "No such file"));
    assert_int_equal(pfi_kernlog_read_file(kl, cp("case-03/dmesg_excerpt.txt"), &d), PFI_OK);
    assert_int_equal(pfi_kernlog_read_file(kl, cp("case-03/dmesg_excerpt.txt"), &d), PFI_OK);
    assert_int_equal(kl->n_events, 2); /* merged across files */
    assert_int_equal(kl->events[0].count, 2);
    assert_int_equal(kl->events[0].file, 1);
    assert_int_equal(kl->events[0].last_file, 2);
    assert_int_equal(kl->n_files, 3);
    assert_int_equal(pfi_kernlog_read_file(NULL, "x", &d), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_kernlog_create(NULL), PFI_ERR_INVALID_ARGUMENT);
    pfi_kernlog_destroy(kl);
    pfi_kernlog_destroy(NULL);
}

/* Past PFI_KERNLOG_MAX_EVENTS distinct events, new ones are counted, repeats still merged. */
static void event_limit(void **state)
{
    (void)state;
    size_t n_lines = PFI_KERNLOG_MAX_EVENTS + 10;
    char *text = malloc(n_lines * 64 + 64);
    assert_non_null(text);
    size_t n = 0;
    for (size_t i = 0; i < n_lines; i++) /* distinct buses: bb:dd over 256 x 32 */
        n += (size_t)snprintf(text + n, 64, "NVRM: Xid (PCI:0000:%02zx:%02zx): 13, x\n", i / 32,
                              i % 32);
    n += (size_t)snprintf(text + n, 64, "NVRM: Xid (PCI:0000:00:00): 13, again\n");
    pfi_kernlog *kl = read_text(text, n);
    assert_int_equal(kl->n_events, PFI_KERNLOG_MAX_EVENTS);
    assert_int_equal(kl->n_dropped, 10);
    assert_int_equal(kl->events[0].count, 2);
    pfi_kernlog_destroy(kl);
    free(text);
}

static void bus_ids(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } t[] = {
        {"0000:3d:00.0", "0000:3d:00.0"},
        {"00000000:3D:00.0", "0000:3d:00.0"},
        {"0000:3D:00.0", "0000:3d:00.0"},
        {"PCI:0000:3d:00", "0000:3d:00.0"},
        {"pci:0000:3d:00", "0000:3d:00.0"},
        {"3d:00.0", "0000:3d:00.0"},
        {" 0000:3d:00.1 ", "0000:3d:00.1"},
        {"0001:3d:1f.7", "0001:3d:1f.7"},
        {"00010002:3d:00.0", "0002:3d:00.0"},
        {"1:2:3.4", "0001:02:03.4"},
        {"10de:20b2", ""},
        {"0009:00", ""},
        {"0000:3d:20.0", ""},
        {"0000:3d:00.8", ""},
        {"0000:3d:00.", ""},
        {"0000:3d:00.0.0", ""},
        {"000000000:3d:00.0", ""},
        {"0000:3d:00:0", ""},
        {"0000::00.0", ""},
        {"0000:3g:00.0", ""},
        {"", ""},
        {"PCI:", ""},
        {"0000:3d:00.0:", ""},
        {"14:20:03", "0014:20:03.0"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char out[PFI_KERNLOG_BUS_LEN];
        bool ok = pfi_kernlog_bus_normalize(t[i].in, strlen(t[i].in), out);
        CHECK(ok == (t[i].out[0] != '\0') && strcmp(out, t[i].out) == 0,
              "'%s' -> %d '%s', want '%s'\n", t[i].in, ok, out, t[i].out);
    }
    char out[PFI_KERNLOG_BUS_LEN];
    CHECK(!pfi_kernlog_bus_normalize(NULL, 3, out), "NULL\n");
    END_CHECKS();
}

static void xid_table(void **state)
{
    (void)state;
    size_t n = 0;
    const int *f = pfi_kernlog_default_fatal(&n);
    assert_true(n >= 10);
    for (size_t i = 1; i < n; i++)
        assert_true(f[i] > f[i - 1]);
    assert_string_equal(pfi_kernlog_xid_name(79), "GPU has fallen off the bus");
    assert_null(pfi_kernlog_xid_name(9999));
    pfi_kernlog_event ev = {.xid = 13};
    assert_false(pfi_kernlog_is_fatal(&ev, NULL, 0));
    int mine[] = {13, 31};
    assert_true(pfi_kernlog_is_fatal(&ev, mine, 2));
    ev.xid = 79;
    assert_false(pfi_kernlog_is_fatal(&ev, mine, 2)); /* the list replaces the default */
    assert_false(pfi_kernlog_is_fatal(&ev, mine, 0)); /* "none" */
    ev.xid = 0;
    assert_true(pfi_kernlog_is_fatal(&ev, mine, 0)); /* a notice: the GPU is gone, always */
    assert_false(pfi_kernlog_is_fatal(NULL, NULL, 0));
    ev.xid = 154;
    snprintf(ev.message, sizeof ev.message,
             "GPU recovery action changed from 0x0 (None) to "
             "0x2 (Node Reboot Required)");
    assert_true(pfi_kernlog_is_fatal(&ev, NULL, 0));
    snprintf(ev.message, sizeof ev.message, "GPU recovery action changed");
    assert_false(pfi_kernlog_is_fatal(&ev, NULL, 0));
}

/* case-03: the kernel log names GPU 1 by its bus; matching ignores case and domain width. */
static pfi_telemetry *case03_tm(size_t max_lines)
{
    pfi_telemetry_options o = {.keep_series = true};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    pfi_diag d;
    if (max_lines == 0) {
        assert_int_equal(
            pfi_telemetry_read_file(tm, cp("case-03/query_loop.csv"), PFI_TELEMETRY_AUTO, &d),
            PFI_OK);
        return tm;
    }
    /* Only the first lines: the loss is not in the telemetry yet. */
    FILE *in = fopen(cp("case-03/query_loop.csv"), "rb");
    assert_non_null(in);
    static char buf[4096];
    size_t n = 0;
    for (size_t l = 0; l < max_lines && fgets(buf + n, (int)(sizeof buf - n), in) != NULL; l++)
        n += strlen(buf + n);
    fclose(in);
    FILE *f = fmemopen(buf, n, "rb");
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "head", PFI_TELEMETRY_AUTO, &d), PFI_OK);
    fclose(f);
    return tm;
}

static void apply_case03(void **state)
{
    (void)state;
    pfi_kernlog *kl = NULL;
    assert_int_equal(pfi_kernlog_create(&kl), PFI_OK);
    pfi_diag d;
    assert_int_equal(pfi_kernlog_read_file(kl, cp("case-03/dmesg_excerpt.txt"), &d), PFI_OK);
    pfi_kernlog_match m[2];
    size_t matched = 99;

    /* The whole capture: GPU 1 is already lost; the kernel log confirms it. */
    pfi_telemetry *tm = case03_tm(0);
    double lost_t = tm->entities[1].lost_t_s;
    assert_int_equal(pfi_kernlog_apply(kl, tm, NULL, 0, m, &matched), PFI_OK);
    assert_int_equal(matched, 2);
    assert_int_equal(m[0].entity, 1);
    assert_true(m[0].fatal);
    assert_false(m[0].marked);
    assert_true(tm->entities[1].lost_t_s == lost_t); /* the telemetry's time stays */
    pfi_telemetry_destroy(tm);

    /* The first two samples: nothing lost in the telemetry; the kernel log marks GPU 1. */
    tm = case03_tm(5);
    assert_false(tm->entities[1].lost);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_false(red.flags & PFI_RED_GPU_LOST);
    assert_int_equal(pfi_kernlog_apply(kl, tm, NULL, 0, m, &matched), PFI_OK);
    assert_int_equal(m[0].entity, 1);
    assert_true(m[0].marked);
    assert_int_equal(m[1].entity, 1);
    assert_false(m[1].marked); /* already lost by the first */
    assert_false(tm->entities[0].lost);
    assert_true(tm->entities[1].lost);
    assert_true(isnan(tm->entities[1].lost_t_s)); /* no time correlation invented */
    assert_false(isnan(tm->entities[1].last_good_t_s));
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_true(red.flags & PFI_RED_GPU_LOST);
    bool noted = false;
    for (size_t i = 0; i < tm->n_notes; i++)
        noted |= strstr(tm->notes[i], "gpu1: GPU lost per the kernel log: Xid 79") != NULL;
    assert_true(noted);
    pfi_telemetry_destroy(tm);

    /* "none": only the notice is fatal — it still marks the GPU. */
    tm = case03_tm(5);
    int none[1] = {0};
    assert_int_equal(pfi_kernlog_apply(kl, tm, none, 0, m, NULL), PFI_OK);
    assert_false(m[0].fatal);
    assert_true(m[1].fatal && m[1].marked);
    pfi_telemetry_destroy(tm);
    pfi_kernlog_destroy(kl);

    /* Another job's GPU (bus 5e): noted, never fatal for this run. */
    kl = read_text("[ 8123.441915] NVRM: Xid (PCI:0000:5E:00): 79, GPU has fallen off the bus.\n"
                   "[ 8124.0] NVRM: Xid (PCI:0000:1b:00): 13, app error\n",
                   0);
    tm = case03_tm(5);
    assert_int_equal(pfi_kernlog_apply(kl, tm, NULL, 0, m, &matched), PFI_OK);
    assert_int_equal(matched, 1);
    assert_int_equal(m[0].entity, -1);
    assert_true(m[0].fatal);
    assert_false(m[0].marked);
    assert_int_equal(m[1].entity, 0); /* 00000000:1B:00.0 in the CSV */
    assert_false(m[1].fatal);
    assert_false(tm->entities[0].lost || tm->entities[1].lost);
    assert_int_equal(pfi_kernlog_apply(NULL, tm, NULL, 0, m, NULL), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_kernlog_apply(kl, tm, NULL, 0, NULL, NULL), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_kernlog_apply(kl, tm, NULL, 3, m, NULL), PFI_ERR_INVALID_ARGUMENT);
    pfi_telemetry_destroy(tm);
    pfi_kernlog_destroy(kl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_forms),    cmocka_unit_test(case03_file),
        cmocka_unit_test(continuations), cmocka_unit_test(garbage),
        cmocka_unit_test(long_lines),    cmocka_unit_test(files),
        cmocka_unit_test(event_limit),   cmocka_unit_test(bus_ids),
        cmocka_unit_test(xid_table),     cmocka_unit_test(apply_case03),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
