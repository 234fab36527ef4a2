/*
 * Closing a SQLite connection without leaving -wal/-shm files (see db_close.h).
 */
#include "core/db_close.h"

#include <stddef.h>

void db_close(sqlite3 *db)
{
    if (db == NULL)
        return;
    for (sqlite3_stmt *st; (st = sqlite3_next_stmt(db, NULL)) != NULL;)
        sqlite3_finalize(st);
    if (sqlite3_db_readonly(db, "main") == 0) {
        sqlite3_busy_timeout(db, 0);
        sqlite3_exec(db, "PRAGMA main.journal_mode = DELETE", NULL, NULL, NULL);
    }
    sqlite3_close(db);
}
