/*
 * pfid's log: one line per event on stderr, "pfid: LEVEL: message". journald (or whoever
 * runs pfid) adds the time. Thread-safe (one fprintf per line). Control characters and
 * invalid UTF-8 in the message (a job name, a path, a header value) are written as \xNN
 * (pfi_escape): text from requests, files or drivers cannot forge a line.
 */
#ifndef PFID_LOG_H
#define PFID_LOG_H

enum { PFID_LOG_ERROR = 0, PFID_LOG_WARN = 1, PFID_LOG_INFO = 2, PFID_LOG_DEBUG = 3 };

/* The level at and below which lines are written (default PFID_LOG_INFO). */
void pfid_log_set_level(int level);
int pfid_log_level(void);
void pfid_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_ERROR(...) pfid_log(PFID_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) pfid_log(PFID_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) pfid_log(PFID_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) pfid_log(PFID_LOG_DEBUG, __VA_ARGS__)

#endif
