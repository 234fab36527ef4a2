/*
 * Closing a SQLite connection of libpfi (the run store, the controller's audit log and the
 * read-only readers of both) without leaving side files. Not part of the public API.
 */
#ifndef PFI_DB_CLOSE_H
#define PFI_DB_CLOSE_H

#include <sqlite3.h>

/*
 * db_close — close db (NULL: no-op), leaving no -wal or -shm file beside the database.
 *
 * The store and the audit log run in WAL mode, so that readers (pfi control status, pfi
 * runs) can look while a sweep or a controller writes. WAL mode is persistent, and a
 * read-only connection to a WAL database must create both side files and cannot remove them
 * when it closes: pfi report, pfi control status and a controller's --store would each leave
 * a pair. So a writable connection that is the last one open switches the file back to a
 * rollback journal before it closes — which checkpoints the WAL into the database and
 * removes both files — and the next writer switches it to WAL again. When another
 * connection is open the switch fails at once (no busy wait) and is left to the last one.
 * Statements still prepared are finalized first: sqlite3_close would otherwise refuse and
 * leave the connection, and its files, open.
 */
void db_close(sqlite3 *db);

#endif
