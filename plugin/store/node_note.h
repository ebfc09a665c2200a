/*
 * node_note.h - the node-local note by which only the batch host does
 * ledger work (docs/architecture.md, "Only the batch host"): every prolog
 * notes the job in run_dir, the batch step claims its node's note, and the
 * epilog does ledger work only where the note was claimed.
 */
#ifndef RB_NODE_NOTE_H
#define RB_NODE_NOTE_H

#include <stdint.h>

#include "config/config.h"
#include "base/base.h"
#include "rule/rule.h"

#define RB_RUN_DIR_DEFAULT "/run/restore_budget"

/* What the prolog knows of the job: what a note carries to the batch
 * step, and what its start records (rb_lifecycle_begin). */
typedef struct {
	const char *cluster;
	uint32_t job_id;
	uint32_t array_job_id;    /* an array task's array id, else 0 */
	uint32_t array_task_id;   /* its task id (0 when not a task) */
	int64_t attempt;          /* SLURM_JOB_RESTART_COUNT */
	uint32_t uid, gid;
	const char *user;
	const char *partition;
	const char *account;
	const char *work_dir;
	const char *checkpoint_dir; /* --checkpoint-dir, or NULL */
	const char *submission;    /* identity across requeues, or NULL (see
				    * rb_record_names_another_job) */
	rb_overrides options;      /* parsed job options */
	int64_t now;
	/* store = "controller": when the controller finished requeueing the
	 * attempt on record (the job's SubmitTime since), for an attempt with
	 * no end; 0 = unknown (docs/stores.md, "Confirmations") */
	int64_t requeued_at;
} rb_job_info;

/* A job read back from a note; job's strings point into the buffers. */
typedef struct {
	rb_job_info job;
	char cluster[RB_NAME_MAX];
	char user[RB_NAME_MAX];
	char partition[RB_NAME_MAX];
	char account[RB_NAME_MAX];
	char work_dir[RB_PATH_MAX];
	char submission[RB_SUBMISSION_MAX];
} rb_note_job;

/* What the epilog finds on its node. */
typedef enum {
	RB_NOTE_NONE,    /* no note: no tracked prolog ran here; nothing to do */
	RB_NOTE_NOTED,   /* a prolog's note nobody claimed: not the batch host */
	RB_NOTE_CLAIMED, /* the batch step claimed it: the batch host */
	RB_NOTE_UNKNOWN  /* no run_dir, or one not root's alone: no prolog
			  * could note the job here; the ledger must decide */
} rb_note_state;

/* value into out (size bytes): as it is if it fits, else replaced by
 * "rb-digest:<16 hex of rb_checksum>:<length>", which is no path and no
 * name a config lists. 0 kept, 1 replaced. (docs/security.md, "Names") */
int rb_note_fit(const char *value, size_t size, char *out);

/* Prolog: note the job on this node (host = this node's name). Every value
 * is escaped, so any byte a path or name may hold round-trips; a value
 * longer than rb_note_job keeps is replaced (rb_note_fit) and logged. */
int rb_note_write(const char *run_dir, const char *host,
		  const rb_job_info *job, rb_err *err);

/* Batch step (root): claim this node's note and read the job back.
 * 0 claimed, 1 no note here, -1 error (said in err). */
int rb_note_claim(const char *run_dir, const char *host, const char *cluster,
		  uint32_t job_id, rb_note_job *out, rb_err *err);

/* Batch step without a note (Slurm ran no prolog): mark this node as the
 * batch host so its epilog records the end. */
int rb_note_mark(const char *run_dir, const char *host, const char *cluster,
		 uint32_t job_id, rb_err *err);

/* Epilog: the attempt of the note the batch step claimed here (the
 * prolog's attempt number). 0, or -1 (no claimed note, or an empty mark:
 * Slurm ran no prolog). */
int rb_note_claimed_attempt(const char *run_dir, const char *host,
			    const char *cluster, uint32_t job_id,
			    int64_t *attempt);

/* Epilog: what this node holds for the job. */
rb_note_state rb_note_look(const char *run_dir, const char *host,
			   const char *cluster, uint32_t job_id);

/*
 * An end the epilog could not record (state_dir read-only, full or gone),
 * kept on the batch host until a later root callback there records it:
 * the next attempt's batch step, or any later epilog on the node
 * (docs/architecture.md, "An end not written"). Only the attempt that
 * ran gets it, never a later one.
 */
typedef struct {
	int64_t attempt;       /* the attempt that ended (as recorded) */
	int64_t restart_count; /* SLURM_JOB_RESTART_COUNT in the epilog */
	int exit_code, signal; /* SLURM_JOB_EXIT_CODE2 */
	int64_t now;           /* when it ended */
} rb_note_end;

/* The end of job_id on this node, in "<host>.<cluster>.<job>.end". */
int rb_note_end_keep(const char *run_dir, const char *host,
		     const char *cluster, uint32_t job_id,
		     const rb_note_end *end, rb_err *err);

/* Read it back: 0 read, 1 none kept, -1 not one this plugin wrote. */
int rb_note_end_read(const char *run_dir, const char *host,
		     const char *cluster, uint32_t job_id, rb_note_end *out);

/* Recorded, or no longer recordable: the kept end goes. */
void rb_note_end_drop(const char *run_dir, const char *host,
		      const char *cluster, uint32_t job_id);

/* The jobs with an end kept on this node, at most max; their count. */
int rb_note_end_list(const char *run_dir, const char *host,
		     const char *cluster, uint32_t *jobs, int max);

/* Epilog: the job is done on this node; drop its notes (not a kept end:
 * that goes only once recorded). */
void rb_note_forget(const char *run_dir, const char *host,
		    const char *cluster, uint32_t job_id);

#endif
