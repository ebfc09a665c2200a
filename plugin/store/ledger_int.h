/*
 * ledger_int.h - what the ledger's own files share (ledger.c: opening,
 * reading and the atomic write; ledger_fs.c: names, state_dir and the safe
 * opens; ledger_lock.c: the lock; eventlog.c: the event log; ledger_scan.c:
 * listing and removal). Not for use outside the ledger.
 */
#ifndef RB_LEDGER_INT_H
#define RB_LEDGER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ledger.h"

#define CLUSTER_MAX RB_CLUSTER_NAME_MAX
#define NAME_BUF 64
/* A path for messages: l->path (< RB_PATH_MAX) + "/NNN/" + a file name. */
#define PATH_BUF (RB_PATH_MAX + 2 * NAME_BUF)
/* Longest event line we write or read back; longer on disk = damaged. */
#define EVENT_LINE_MAX 32768
#define CRC_TAIL " crc="
#define CRC_TAIL_LEN (sizeof(CRC_TAIL) - 1 + 16)
/* rb_ledger_lock retries when gc removed the log under it; a bound keeps a
 * pathological remove/create storm from spinning forever. */
#define LOCK_RETRIES 100

struct rb_ledger {
	int dir_fd;                 /* <state_dir>/<cluster> */
	int dir_flag;               /* O_PATH (root) or O_RDONLY: see subdir_flags */
	rb_ledger_mode mode;
	char cluster[CLUSTER_MAX + 1];
	char path[RB_PATH_MAX];     /* "<state_dir>/<cluster>", for messages */
};

struct rb_job {
	rb_ledger *l;
	uint32_t job_id;
	int bucket_fd;
	int lock_fd;                /* "<id>.lock": holds the lock */
	int log_fd;                 /* "<id>.log", opened under the lock */
	/* The log's size as seen when the lock was taken (nobody appends
	 * without it), so that the first rb_ledger_append after the lock
	 * needs no fstat; -1 = ask the file. */
	off_t log_size;
};

/* ---- ledger_fs.c: names -------------------------------------------------- */
/* 0, or -1 with err naming what a cluster name may be. */
int lg_check_cluster(const char *cluster, rb_err *err);
int lg_check_job_id(uint32_t job_id, rb_err *err);
/* "<job_id><suffix>" (the same text as "%u%s"). */
void lg_file_name(uint32_t job_id, const char *suffix, char *buf, size_t len);
/* "<name>.tmp.<pid>": the temp file of a record write. */
void lg_tmp_name(const char *name, long pid, char *buf, size_t len);
/* "<state_dir>/<cluster>/<bucket>[/<name>]", for messages (errno kept). */
const char *lg_job_path(const rb_ledger *l, uint32_t job_id, const char *name,
			char *buf, size_t len);

/* ---- ledger_fs.c: trust and safe opens ----------------------------------- */
/* state_dir opened (dir_flag: O_PATH or O_RDONLY), a real directory root
 * alone may write: the fd, or -1 with err. */
int lg_open_state_dir(const char *state_dir, int dir_flag, rb_err *err);
/* l->dir_fd: <state_dir>/<cluster> under state_fd, created if asked (mode
 * 0755). 0, 1 if missing and not created, -1. */
int lg_open_cluster_dir(rb_ledger *l, int state_fd, bool create,
			rb_err *err);
/* job_id's bucket directory, created if asked: 0, 1 if missing, -1. */
int lg_open_bucket(rb_ledger *l, uint32_t job_id, bool create, int *out,
		   rb_err *err);
/*
 * A file of job_id's bucket just opened as fd: it must be a regular file,
 * and, where root writes (must_be_root), owned by root and not writable by
 * group or others. 0, or -1 with err (the caller closes fd).
 */
int lg_check_opened_file(rb_ledger *l, int fd, uint32_t job_id,
			 const char *name, struct stat *st, bool must_be_root,
			 rb_err *err);
/*
 * Open file `name` of job_id's bucket for reading: regular, not a symlink,
 * not blocking on a FIFO. Returns 0, 1 if absent, RB_LEDGER_NOT_READABLE
 * (another group's file) or -1, err set for both.
 */
int lg_open_file_ro(rb_ledger *l, int bucket_fd, uint32_t job_id,
		    const char *name, int *out, struct stat *st, rb_err *err);

/* ---- ledger.c: a temp file of j's bucket ------------------------------- */
/* Create tmp (O_EXCL, flags added; we hold the job's lock, so a file of
 * that name is a crashed earlier process's with our pid: replaced), root's
 * with group gid and RB_LEDGER_FILE_MODE (docs/security.md, "Who reads
 * what"), holding a then b, fsync'd. The fd, or -1 with errno (tmp gone). */
int lg_write_temp(rb_job *j, const char *tmp, int flags, gid_t gid,
		  const char *a, size_t alen, const char *b, size_t blen);

/* ---- eventlog.c / eventlog_fold.c: the event log ------------------------- */
/* "[\n]t=<now> <event> crc=<hex>\n" into buf (elen + 64 bytes); its length. */
size_t lg_event_line(char *buf, bool newline, const char *event, size_t elen);
/* Each line of the open log fd (from its offset) to fn, the checksum
 * checked for the first verify_below lines (SIZE_MAX: all); buf:
 * EVENT_LINE_MAX + 1 bytes; path for messages. 0 or -1. */
int lg_stream_events(int fd, char *buf, const char *path, size_t verify_below,
		     rb_event_fn fn, void *ctx, rb_err *err);
/* Fold j's log if appending `incoming` more bytes would cross the cap
 * (rb_ledger_set_log_cap). A fold that fails is logged and leaves the log
 * as it was: the append goes on (an event is worth more than the cap). */
void lg_log_fold_if_over(rb_job *j, size_t incoming);

#endif
