/*
 * ledger.h - the per-job records under state_dir (docs/architecture.md,
 * "The ledger").
 *
 * Layout: <state_dir>/<cluster>/<job_id % 1000, "%03u">/<job_id>.rec   record
 *                                                      /<job_id>.log   event log
 *                                                      /<job_id>.lock  the lock
 * An fcntl write lock on the lock file (root's, 0600: no user can open it;
 * works between nodes over NFS) serializes every read-modify-write of the
 * record, which is replaced atomically (ledger.c). Writes need root. The
 * record and the event log are root's, group the job's gid, mode
 * RB_LEDGER_FILE_MODE: root and the job's group read them, nobody else
 * (docs/security.md, "Who reads what"). Every open is O_NOFOLLOW, from a
 * directory fd (ledger_fs.c).
 */
#ifndef RB_LEDGER_H
#define RB_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/base.h"
#include "rule/rule.h"

/* A job's record and event log: root's, the job's group may read them. */
#define RB_LEDGER_FILE_MODE 0640

typedef struct rb_ledger rb_ledger;
typedef struct rb_job rb_job;   /* a locked job */

typedef enum {
	RB_LEDGER_READ = 0,  /* CLI reads: no ownership demands beyond safety */
	RB_LEDGER_WRITE,     /* root: creates dirs; state_dir must be owned by
	                        root and not writable by group or others */
} rb_ledger_mode;

/* Open <state_dir>/<cluster>, creating it in WRITE mode. A state_dir that is
 * not a directory, not owned by root, or writable by group/others is refused
 * (also in READ mode: a user-controlled ledger is not trusted). */
int rb_ledger_open(const char *state_dir, const char *cluster,
		   rb_ledger_mode mode, rb_ledger **out, rb_err *err);
void rb_ledger_close(rb_ledger *l);

/* rb_ledger_open in READ mode, except that a cluster directory that does not
 * exist yet is not an error: returns 1 with *out = NULL (nothing recorded). */
int rb_ledger_open_read(const char *state_dir, const char *cluster,
			rb_ledger **out, rb_err *err);

/* Lock job_id's record (creating its root-only lock file and the event log
 * if needed): waits at most RB_LEDGER_LOCK_WAIT_MS for another holder, then
 * fails with err set. WRITE mode only. */
int rb_ledger_lock(rb_ledger *l, uint32_t job_id, rb_job **out, rb_err *err);

/* rb_ledger_lock gives up after this long (ms) if another holds the lock. */
#define RB_LEDGER_LOCK_WAIT_MS 5000
/* Change it for this process (tests); <= 0 restores the default. */
void rb_ledger_set_lock_wait(long ms);
void rb_ledger_unlock(rb_job *j);

/* The path of job_id's record, without opening anything (a cheap "is
 * there a record?" with lstat, before taking a lock that would create the
 * job's event log). -1 if it does not fit. */
int rb_ledger_record_path(const char *state_dir, const char *cluster,
			  uint32_t job_id, char *buf, size_t len);

/* Read the record: 0 = read, 1 = no record yet (rec initialized), -1 = error
 * (corrupt, torn, unknown version, I/O) with err saying which. Works with or
 * without the lock (a reader sees the old or the new record). */
int rb_ledger_read(rb_ledger *l, uint32_t job_id, rb_record *rec, rb_err *err);
int rb_ledger_read_locked(rb_job *j, rb_record *rec, rb_err *err);

/* rb_ledger_read for a listing of every job (the CLI as any user): also
 * RB_LEDGER_NOT_READABLE, with err set, for a record the caller may not
 * read (another group's job: docs/security.md, "Who reads what"), which a
 * listing skips rather than reports as corrupt. */
#define RB_LEDGER_NOT_READABLE 2
int rb_ledger_read_for_listing(rb_ledger *l, uint32_t job_id, rb_record *rec,
			       rb_err *err);

/* Replace the record atomically (rec->seq and rec->updated are set here). */
int rb_ledger_write(rb_job *j, rb_record *rec, rb_err *err);

/* Append one event line ("kind=... attempt=... ..."): the ledger prefixes the
 * time and appends a checksum, writes it with one write(), and fsyncs. */
int rb_ledger_append(rb_job *j, const char *event, rb_err *err);

/* The event log stays within RB_LEDGER_LOG_CAP bytes (docs/architecture.md,
 * "The ledger"; it amends the design's "keeps every attempt"): an append
 * that would cross it first folds the older attempts (eventlog_fold.c). */
#define RB_LEDGER_LOG_CAP ((size_t)64 * 1024)
/* Tests and the fuzzer: another cap for this process (>= 4096; 0 restores
 * the default), and a function called after the fold's temp file is
 * written and before its rename (a crash there: tests/unit/test_eventlog.c). */
void rb_ledger_set_log_cap(size_t bytes);
void rb_ledger_set_fold_hook(void (*fn)(void));

/* Call fn for each event line of job_id, as stored (time first, checksum
 * last). A line whose checksum is wrong (torn tail) is passed with ok=false.
 * Returns 0, 1 if there is no log, -1 on error; a non-zero fn stops it. */
typedef int (*rb_event_fn)(const char *line, bool ok, void *ctx);
int rb_ledger_events(rb_ledger *l, uint32_t job_id, rb_event_fn fn, void *ctx,
		     rb_err *err);

/* Call fn for each job id that has a record (a directory scan: CLI only). */
typedef int (*rb_job_fn)(uint32_t job_id, void *ctx);
int rb_ledger_jobs(rb_ledger *l, rb_job_fn fn, void *ctx, rb_err *err);

/* Remove a locked job's record and event log (gc). */
int rb_ledger_remove(rb_job *j, rb_err *err);

#endif
