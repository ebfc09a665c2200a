/*
 * ledger_int.h - what the ledger's own files share (ledger.c: storage and
 * the lock; eventlog.c: the event log; ledger_scan.c: listing and removal).
 * Not for use outside the ledger.
 */
#ifndef RB_LEDGER_INT_H
#define RB_LEDGER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ledger.h"

#define CLUSTER_MAX 63
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
	int dir_flag;               /* O_PATH (root) or O_RDONLY: see open_subdir */
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

int lg_check_job_id(uint32_t job_id, rb_err *err);
void lg_file_name(uint32_t job_id, const char *suffix, char *buf, size_t len);
const char *lg_job_path(const rb_ledger *l, uint32_t job_id, const char *name,
			char *buf, size_t len);
int lg_open_bucket(rb_ledger *l, uint32_t job_id, bool create, int *out,
		   rb_err *err);
int lg_open_file_ro(rb_ledger *l, int bucket_fd, uint32_t job_id,
		    const char *name, int *out, struct stat *st, rb_err *err);

#endif
