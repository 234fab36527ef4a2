/*
 * Tests of the OpenADR 3 client's parsers (pfi/openadr.h): the level table, events to
 * intervals (times, durations, units, levels, what is ignored), the timeline (overlaps,
 * priorities, merging, ramps, clipping) and the report body. Times by hand: 2023-11-14T22:13:20Z
 * is Unix 1700000000 (python3: calendar.timegm((2023,11,14,22,13,20))).
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/memory.h"
#include "pfi/openadr.h"

#define T0 1700000000.0

static void test_levels(void **state)
{
    (void)state;
    pfi_oadr_level *lv;
    size_t n;
    pfi_diag d;
    const char *ok = "# table\n1 10%\n2 0.25  # a fraction\n\n3 5.2kW\n4 6000 W\n";
    assert_int_equal(pfi_oadr_levels_parse(ok, strlen(ok), &lv, &n, &d), PFI_OK);
    assert_int_equal(n, 4);
    assert_int_equal(lv[0].level, 1);
    assert_true(fabs(lv[0].reduction - 0.10) < 1e-12 && isnan(lv[0].budget_w));
    assert_true(fabs(lv[1].reduction - 0.25) < 1e-12);
    assert_true(fabs(lv[2].budget_w - 5200) < 1e-9 && isnan(lv[2].reduction));
    assert_true(fabs(lv[3].budget_w - 6000) < 1e-9);
    pfi_free(lv);
    const char *bare = "1 30\n"; /* a bare 30 is neither a fraction nor a budget */
    assert_int_equal(pfi_oadr_levels_parse(bare, strlen(bare), &lv, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(d.line, 1);
    const char *twice = "1 10%\n1 20%\n";
    assert_int_equal(pfi_oadr_levels_parse(twice, strlen(twice), &lv, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(d.line, 2);
    const char *neg = "-1 10%\n";
    assert_int_equal(pfi_oadr_levels_parse(neg, strlen(neg), &lv, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(pfi_oadr_levels_parse("# none\n", 7, &lv, &n, &d), PFI_ERR_EMPTY);
}

static void test_events(void **state)
{
    (void)state;
    static const pfi_oadr_level lv[] = {{1, 0.1, NAN}, {2, 0.25, NAN}};
    /* ev-a: two 15-min intervals in MW from the event's period, then one with its own period
     * (1 h from 23:00+01:00 = 22:00Z, i.e. T0 - 800 s); ev-b: SIMPLE 2, 9 (no row), 0 (none),
     * a CHARGE_STATE_SETPOINT and a PRICE (ignored with notes). */
    const char *js =
        "[{\"id\":\"ev-a\",\"programID\":\"p1\",\"priority\":3,"
        "\"modificationDateTime\":\"2023-11-14T22:00:00Z\","
        "\"payloadDescriptors\":[{\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"MW\"}],"
        "\"intervalPeriod\":{\"start\":\"2023-11-14T22:13:20Z\",\"duration\":\"PT15M\"},"
        "\"intervals\":["
        "{\"id\":7,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[1.5]}]},"
        "{\"id\":8,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[1.25]}]},"
        "{\"id\":9,\"intervalPeriod\":{\"start\":\"2023-11-14T23:00:00+01:00\","
        "\"duration\":\"PT1H\"},"
        "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[2]}]}]},"
        "{\"id\":\"ev-b\",\"programID\":\"p1\","
        "\"intervalPeriod\":{\"start\":\"2023-11-14T22:13:20.5Z\",\"duration\":\"P1DT2H\"},"
        "\"intervals\":["
        "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]},"
        "{\"id\":1,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[9]}]},"
        "{\"id\":2,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[0]}]},"
        "{\"id\":3,\"payloads\":[{\"type\":\"CHARGE_STATE_SETPOINT\",\"values\":[80]}]},"
        "{\"id\":4,\"payloads\":[{\"type\":\"PRICE\",\"values\":[0.2]}]}]}]";
    pfi_oadr_interval *iv;
    size_t n;
    char *notes;
    pfi_diag d;
    assert_int_equal(pfi_oadr_events_parse(js, strlen(js), lv, 2, &iv, &n, &notes, &d), PFI_OK);
    assert_int_equal(n, 4);
    assert_string_equal(iv[0].event_id, "ev-a");
    assert_string_equal(iv[0].program_id, "p1");
    assert_string_equal(iv[0].modified, "2023-11-14T22:00:00Z");
    assert_int_equal(iv[0].priority, 3);
    assert_int_equal(iv[0].interval_id, 7);
    assert_true(iv[0].start_unix_s == T0 && iv[0].end_unix_s == T0 + 900);
    assert_true(fabs(iv[0].budget_w - 1.5e6) < 1e-6 && isnan(iv[0].reduction));
    assert_true(iv[1].start_unix_s == T0 + 900 && iv[1].end_unix_s == T0 + 1800);
    assert_true(fabs(iv[1].budget_w - 1.25e6) < 1e-6);
    assert_true(iv[2].start_unix_s == T0 - 800 && iv[2].end_unix_s == T0 + 2800);
    assert_true(fabs(iv[2].budget_w - 2e6) < 1e-6);
    assert_string_equal(iv[3].event_id, "ev-b");
    assert_int_equal(iv[3].priority, LONG_MAX);
    assert_true(fabs(iv[3].start_unix_s - (T0 + 0.5)) < 1e-6);
    assert_true(fabs(iv[3].end_unix_s - (T0 + 0.5 + 26 * 3600)) < 1e-6);
    assert_true(fabs(iv[3].reduction - 0.25) < 1e-12 && isnan(iv[3].budget_w));
    assert_non_null(notes);
    assert_non_null(strstr(notes, "SIMPLE level 9 ignored"));
    assert_non_null(strstr(notes, "CHARGE_STATE_SETPOINT ignored"));
    assert_non_null(strstr(notes, "PRICE ignored"));
    assert_null(strstr(notes, "level 0")); /* level 0 is normal operation: no note */
    pfi_free(iv);
    pfi_free(notes);

    /* default units (KW), an open-ended PT0S interval, one object for the array */
    const char *one = "{\"id\":\"e\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
                      "\"2023-11-14T22:13:20Z\"},\"intervals\":[{\"id\":0,\"payloads\":[{"
                      "\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[4]}]}]}";
    assert_int_equal(pfi_oadr_events_parse(one, strlen(one), NULL, 0, &iv, &n, &notes, &d), PFI_OK);
    assert_int_equal(n, 1);
    assert_true(fabs(iv[0].budget_w - 4000) < 1e-9);
    assert_true(iv[0].end_unix_s == T0 + 10.0 * 365 * 86400);
    assert_null(notes);
    pfi_free(iv);

    /* no events: OK, nothing */
    assert_int_equal(pfi_oadr_events_parse("[]", 2, NULL, 0, &iv, &n, &notes, &d), PFI_OK);
    assert_int_equal(n, 0);
    assert_null(iv);

    /* errors name the event and field */
    const char *badtime = "[{\"id\":\"e1\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
                          "\"2023-11-14 22:13\"},\"intervals\":[]}]";
    assert_int_equal(pfi_oadr_events_parse(badtime, strlen(badtime), NULL, 0, &iv, &n, &notes, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "e1"));
    const char *nostart = "[{\"id\":\"e2\",\"programID\":\"p\",\"intervals\":[{\"id\":0,"
                          "\"payloads\":[]}]}]";
    assert_int_equal(pfi_oadr_events_parse(nostart, strlen(nostart), NULL, 0, &iv, &n, &notes, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "no start"));
    const char *badid = "[{\"id\":\"a/b\",\"programID\":\"p\",\"intervals\":[]}]";
    assert_int_equal(pfi_oadr_events_parse(badid, strlen(badid), NULL, 0, &iv, &n, &notes, &d),
                     PFI_ERR_PARSE);
    const char *baddur = "[{\"id\":\"e\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
                         "\"2023-11-14T22:13:20Z\",\"duration\":\"-PT1H\"},\"intervals\":[]}]";
    assert_int_equal(pfi_oadr_events_parse(baddur, strlen(baddur), NULL, 0, &iv, &n, &notes, &d),
                     PFI_ERR_PARSE);
    assert_int_equal(pfi_oadr_events_parse("{", 1, NULL, 0, &iv, &n, &notes, &d), PFI_ERR_PARSE);
    /* unknown units: the interval is ignored, said */
    const char *kwh = "[{\"id\":\"e\",\"programID\":\"p\",\"payloadDescriptors\":[{"
                      "\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"KWH\"}],"
                      "\"intervalPeriod\":{\"start\":\"2023-11-14T22:13:20Z\",\"duration\":"
                      "\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
                      "\"IMPORT_CAPACITY_LIMIT\",\"values\":[4]}]}]}]";
    assert_int_equal(pfi_oadr_events_parse(kwh, strlen(kwh), NULL, 0, &iv, &n, &notes, &d), PFI_OK);
    assert_int_equal(n, 0);
    assert_non_null(strstr(notes, "units 'KWH' ignored"));
    pfi_free(notes);
}

static pfi_oadr_interval mk(const char *ev, long prio, double s, double e, double red, double bw)
{
    pfi_oadr_interval x;
    memset(&x, 0, sizeof x);
    snprintf(x.event_id, sizeof x.event_id, "%s", ev);
    snprintf(x.program_id, sizeof x.program_id, "p");
    x.priority = prio;
    x.start_unix_s = s;
    x.end_unix_s = e;
    x.reduction = red;
    x.budget_w = bw;
    return x;
}

static void test_timeline(void **state)
{
    (void)state;
    double E = T0; /* epoch */
    /* a: 5000 W [100, 400) then 5000 W [400, 700) (merge) then 4000 W [700, 1000) (step);
     * b: priority 0, 25 % over [600, 800): wins over a there; c: ended before now. */
    pfi_oadr_interval iv[] = {
        mk("a", 1, E + 100, E + 400, NAN, 5000),  mk("a", 1, E + 400, E + 700, NAN, 5000),
        mk("a", 1, E + 700, E + 1000, NAN, 4000), mk("b", 0, E + 600, E + 800, 0.25, NAN),
        mk("c", 1, E - 500, E + 50, NAN, 1000),
    };
    pfi_ctl_event *ev;
    size_t n;
    pfi_diag d;
    assert_int_equal(pfi_oadr_timeline(iv, 5, E, E + 60, 30, &ev, &n, &d), PFI_OK);
    assert_int_equal(n, 3);
    assert_true(ev[0].start_s == 100 && ev[0].end_s == 600 && ev[0].budget_w == 5000);
    assert_true(ev[0].ramp_s == 30);
    assert_true(ev[1].start_s == 600 && ev[1].end_s == 800 && ev[1].reduction == 0.25);
    assert_true(isnan(ev[1].budget_w) && ev[1].ramp_s == 0); /* continues: steps */
    assert_true(ev[2].start_s == 800 && ev[2].end_s == 1000 && ev[2].budget_w == 4000);
    pfi_free(ev);
    /* equal priorities: the lower budget wins; a budget wins over a reduction */
    pfi_oadr_interval eq[] = {mk("a", 1, E + 0, E + 100, NAN, 5000),
                              mk("b", 1, E + 50, E + 150, NAN, 4000),
                              mk("c", 1, E + 120, E + 200, 0.5, NAN)};
    assert_int_equal(pfi_oadr_timeline(eq, 3, E, E, 0, &ev, &n, &d), PFI_OK);
    assert_int_equal(n, 3);
    assert_true(ev[0].start_s == 0 && ev[0].end_s == 50 && ev[0].budget_w == 5000);
    assert_true(ev[1].start_s == 50 && ev[1].end_s == 150 && ev[1].budget_w == 4000);
    assert_true(ev[2].start_s == 150 && ev[2].end_s == 200 && ev[2].reduction == 0.5);
    pfi_free(ev);
    /* later: a is over and left out */
    assert_int_equal(pfi_oadr_timeline(eq, 3, E, E + 140, 0, &ev, &n, &d), PFI_OK);
    assert_int_equal(n, 2);
    assert_true(ev[0].start_s == 50 && ev[0].end_s == 150 && ev[0].budget_w == 4000);
    assert_true(ev[1].start_s == 150 && ev[1].end_s == 200 && ev[1].reduction == 0.5);
    pfi_free(ev);
    /* a start before the epoch is clipped to 0; a ramp longer than the piece is cut */
    pfi_oadr_interval early[] = {mk("a", 1, E - 100, E + 20, 0.1, NAN)};
    assert_int_equal(pfi_oadr_timeline(early, 1, E, E, 60, &ev, &n, &d), PFI_OK);
    assert_int_equal(n, 1);
    assert_true(ev[0].start_s == 0 && ev[0].end_s == 20 && ev[0].ramp_s == 20);
    pfi_free(ev);
    /* everything over: nothing */
    assert_int_equal(pfi_oadr_timeline(early, 1, E, E + 30, 0, &ev, &n, &d), PFI_OK);
    assert_int_equal(n, 0);
    assert_null(ev);
    assert_int_equal(pfi_oadr_timeline(early, 1, E, E, -1, &ev, &n, &d), PFI_ERR_INVALID_ARGUMENT);
}

static void test_report(void **state)
{
    (void)state;
    pfi_oadr_interval iv[] = {mk("ev-1", 1, T0, T0 + 300, NAN, 5000),
                              mk("ev-1", 1, T0 + 300, T0 + 600, NAN, 5000)};
    iv[0].interval_id = 4;
    iv[1].interval_id = 5;
    double mw[] = {4200, NAN}; /* the second not measured: left out */
    char *s = pfi_oadr_report_json(iv, 2, mw, "ven-1");
    assert_non_null(s);
    json_t *j = json_loads(s, 0, NULL);
    pfi_free(s);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "eventID")), "ev-1");
    assert_string_equal(json_string_value(json_object_get(j, "programID")), "p");
    assert_string_equal(json_string_value(json_object_get(j, "clientName")), "ven-1");
    json_t *ivs = json_object_get(json_array_get(json_object_get(j, "resources"), 0), "intervals");
    assert_int_equal(json_array_size(ivs), 1);
    json_t *x = json_array_get(ivs, 0);
    assert_int_equal(json_integer_value(json_object_get(x, "id")), 4);
    json_t *per = json_object_get(x, "intervalPeriod");
    assert_string_equal(json_string_value(json_object_get(per, "start")), "2023-11-14T22:13:20Z");
    assert_string_equal(json_string_value(json_object_get(per, "duration")), "PT300S");
    json_t *v = json_array_get(
        json_object_get(json_array_get(json_object_get(x, "payloads"), 0), "values"), 0);
    assert_true(fabs(json_number_value(v) - 4.2) < 1e-12); /* kW */
    json_decref(j);
    double none[] = {NAN, NAN};
    assert_null(pfi_oadr_report_json(iv, 2, none, "ven-1"));
    assert_null(pfi_oadr_report_json(iv, 0, mw, "ven-1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
