/*
 * record.h - one job's ledger record and its text form.
 *
 * The text form is what a person sees with `cat`: a version line, one
 * "key=value" line per field, and a checksum line over everything before it.
 * Parsing is strict: a record that is torn, corrupt, of an unknown version
 * or with a bad checksum is refused with a reason, never read as zeros.
 * Values are escaped (rb_kv_escape) so paths with spaces, '=' or newlines
 * round-trip.
 */
#ifndef RB_RECORD_H
#define RB_RECORD_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"
#include "engine.h"

/* The format's version, on the record's first line: a record of any other
 * version is refused (docs/security.md, "Record versions"). */
#define RB_RECORD_VERSION 2
#define RB_NAME_MAX 256
/* A job's submission identity: printable, no spaces (rb_submission_ok). */
#define RB_SUBMISSION_MAX 80
/* Every string field at its longest, of bytes escaped to 3 each (five paths,
 * the fallback's bad list, the names): ~80 KiB; a record that could not be
 * written would leave its job untracked (docs/security.md, "Names"). */
#define RB_RECORD_TEXT_MAX (128L * 1024)

/* Checkpoint fallback (docs/rule.md, "Checkpoint fallback"): at most
 * RB_FALLBACK_BAD_MAX checkpoints marked bad, oldest dropped first (fewer
 * when their paths are long: the list is at most RB_FALLBACK_LIST_MAX - 1
 * bytes). Every member is an optional record field: written only when not
 * empty or zero, so a job without a fallback has the record it always had. */
#define RB_FALLBACK_BAD_MAX 16
#define RB_FALLBACK_LIST_MAX 4096
#define RB_FILE_ID_TEXT_MAX 96

typedef struct {
	/* "dev:ino:size:mtime_ns" of cur.checkpoint, taken where the batch
	 * step found it ("" = unknown: never marked bad) */
	char cur_id[RB_FILE_ID_TEXT_MAX];
	/* the bad newest checkpoint, when cur was handed an older one */
	char from[RB_PATH_MAX];
	/* consecutive charged failed restores of one file (its identity) */
	char streak_id[RB_FILE_ID_TEXT_MAX];
	int streak;
	int64_t fallbacks;        /* attempts handed an older checkpoint */
	/* the bad list, oldest first: "ID:PATH" entries joined by one space,
	 * PATH escaped by rb_kv_escape (so it holds no space) */
	char bad[RB_FALLBACK_LIST_MAX];
} rb_fallback;

typedef struct rb_record {
	char cluster[RB_NAME_MAX];
	uint32_t job_id;
	/* an array task's array job id (SLURM_ARRAY_JOB_ID) and task id;
	 * 0 and 0 for a job that is not an array task (rb_job_is_task) */
	uint32_t array_job_id;
	uint32_t array_task_id;
	uint32_t uid;
	uint32_t gid;
	char user[RB_NAME_MAX];
	char partition[RB_NAME_MAX];
	char account[RB_NAME_MAX];
	char work_dir[RB_PATH_MAX];
	char checkpoint_dir[RB_PATH_MAX]; /* --checkpoint-dir as given ("" = none) */
	char submission[RB_SUBMISSION_MAX]; /* who this job is across requeues ("" = unknown) */
	int64_t created;                  /* unix seconds */
	int64_t updated;
	uint64_t seq;                     /* incremented by every write */
	rb_budget budget;
	rb_fallback fallback;
} rb_record;

void rb_record_init(rb_record *rec);

/* How Slurm's commands address one job: "<array_job_id>_<task_id>" for an
 * array task (a bare array id would mean every task of the array), else
 * "<job_id>". out holds at least RB_JOB_ADDR_MAX bytes; returns out. */
#define RB_JOB_ADDR_MAX 24
const char *rb_job_addr(uint32_t job_id, uint32_t array_job_id,
			uint32_t array_task_id, char *out);

/* Format into buf (size len). Returns bytes written (without NUL), or -1 if
 * it does not fit. */
ssize_t rb_record_format(const rb_record *rec, char *buf, size_t len);

/* Parse text (not necessarily NUL-terminated, `len` bytes). Returns 0, or -1
 * with err saying what is wrong ("checksum mismatch", "unknown version 7",
 * "line 12: bad value for failures"...). */
int rb_record_parse(const char *text, size_t len, rb_record *rec, rb_err *err);

/* Escape a value for a key=value line: bytes outside printable ASCII, space,
 * '%' and '=' become %XX. Returns bytes written or -1 if it does not fit. */
ssize_t rb_kv_escape(const char *in, char *out, size_t outlen);
/* Undo rb_kv_escape; -1 on a malformed escape or if it does not fit. */
ssize_t rb_kv_unescape(const char *in, size_t inlen, char *out, size_t outlen);

/* A canonical decimal integer s[0, n), as a record's text has it: digits
 * only but a leading '-', no leading zero but "0", no "-0", no overflow
 * (record_parse.c). 0, or -1. */
int rb_parse_u64(const char *s, size_t n, uint64_t *out);
int rb_parse_i64(const char *s, size_t n, int64_t min, int64_t max,
		 int64_t *out);

/* The one rule of a cluster's name, for the ledger (its directory under
 * state_dir), the node note (part of its file name) and the CLI (--cluster,
 * SLURM_CLUSTER_NAME, slurm.conf): 1 to RB_CLUSTER_NAME_MAX bytes of
 * [A-Za-z0-9_.-], not starting with '.' (so never "." or ".."); messages
 * say it with RB_CLUSTER_NAME_RULE. */
#define RB_CLUSTER_NAME_MAX 63
#define RB_CLUSTER_NAME_RULE "1 to 63 of [A-Za-z0-9_.-], not starting with '.'"
bool rb_cluster_name_ok(const char *s);

/* Is s a well-formed submission identity: 1..RB_SUBMISSION_MAX-1 bytes of
 * [A-Za-z0-9._:-]? It comes from the job (user-controlled). */
int rb_submission_ok(const char *s);

/* Decimal or 16 lower-case hex digits of v at out, no NUL ("%016" PRIx64
 * for hex); the number of bytes. For the record and the event log. */
size_t rb_fmt_u64(uint64_t v, char *out);
size_t rb_fmt_i64(int64_t v, char *out);
size_t rb_fmt_hex64(uint64_t v, char *out);

/* 64-bit FNV-1a, used as the record and event checksum. */
uint64_t rb_checksum(const void *data, size_t len);

#endif
