/*
 * seam.h - the store seam: the one interface through which the lifecycle
 * and the glue reach a job's record (docs/architecture.md, "The store
 * seam"). Shaped for a store with no lock and no local history (the
 * controller's job record): load a record, apply one step of an attempt.
 * The shared-directory ledger implements it (ledger_seam.c, its lock
 * inside); the unit tests add one in memory (tests/unit/test_store.c).
 */
#ifndef RB_SEAM_H
#define RB_SEAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "rule/rule.h"
#include "ledger.h"
#include "admin_comment.h"

/* One event line at its longest (two escaped paths and the fields). */
#define RB_EVENT_LINE_MAX (3 * RB_PATH_MAX + 2048)
/* The lines of one apply: a reset, a start and a report at most. */
#define RB_EVENTS_LINES 3

/* The history lines an apply adds, each NUL-terminated, one after the
 * other; a store without history drops them. */
typedef struct {
	char buf[RB_EVENTS_LINES * RB_EVENT_LINE_MAX];
	size_t len;       /* bytes used, the current line's NUL not counted */
	size_t line;      /* where the current line starts */
	int n;            /* lines */
	bool overflow;    /* a line did not fit: the apply writes nothing */
} rb_events;

/* Empty ev: no lines (each is written in place as it comes). */
void rb_events_clear(rb_events *ev);

/*
 * What an apply does to the record: change rec (found: the store held
 * one; else rec is rb_record_init's) and add its event lines to ev.
 * 1: changed (the store saves rec, then adds ev to its history); 0:
 * nothing to do, this step is already on the record (nothing is saved);
 * -1: error (err set; nothing is saved). A store may call it more than
 * once (a store without a lock retries on a conflict, with rec and ev
 * afresh): it changes nothing but rec, ev and its own result in ctx.
 */
typedef int (*rb_apply_fn)(rb_record *rec, bool found, rb_events *ev,
			   void *ctx, rb_err *err);

/* Apply flags. IF_RECORDED: a job without a record is left alone (no
 * lock file, no log: nothing created), apply returns 1. */
#define RB_APPLY_IF_RECORDED 1u

typedef struct rb_store rb_store;

typedef struct {
	/* 0 read, 1 no record (rec initialized), -1 error. */
	int (*load)(rb_store *s, uint32_t job_id, rb_record *rec, rb_err *err);
	/* Read, fn, save: one step, atomic for the job. rec: the record as
	 * saved, or as found when fn changed nothing. 0, 1 (IF_RECORDED and
	 * no record), -1. */
	int (*apply)(rb_store *s, uint32_t job_id, unsigned flags,
		     rb_apply_fn fn, void *ctx, rb_events *ev, rb_record *rec,
		     rb_err *err);
	/* Optional (NULL: the store keeps none; callers cope). */
	int (*history)(rb_store *s, uint32_t job_id, rb_event_fn fn, void *ctx,
		       rb_err *err);
	int (*jobs)(rb_store *s, rb_job_fn fn, void *ctx, rb_err *err);
	int (*remove)(rb_store *s, uint32_t job_id, rb_err *err);
} rb_store_ops;

struct rb_store {
	const rb_store_ops *ops;
	const char *where;   /* for messages: "<state_dir>/<cluster>", ... */
};

/* The shared-directory ledger behind the seam (ledger_seam.c): opens
 * <state_dir>/<cluster> on each call, as root to write. */
typedef struct {
	rb_store store;
	const char *state_dir;
	const char *cluster;
	char where[RB_PATH_MAX + RB_NAME_MAX + 2];
} rb_store_dir;

/* Both strings must outlive the store. Returns &d->store. */
rb_store *rb_store_dir_init(rb_store_dir *d, const char *state_dir,
			    const char *cluster);

/* How the controller store reaches one job's AdminComment (the glue: squeue
 * to read, scontrol update to write, each with a deadline). */
typedef struct {
	/* The whole comment ("" if none) into out (len bytes): 0 or -1. */
	int (*read)(void *ctx, char *out, size_t len, rb_err *err);
	/* Replace it: 0 or -1 (the controller refuses once the job is
	 * COMPLETING: docs/stores.md). */
	int (*write)(void *ctx, const char *comment, rb_err *err);
	void *ctx;
} rb_comment_io;

/*
 * store = "controller" behind the seam (line_store.c; docs/stores.md): one
 * job's record is `ident` (who the job is, from the controller and the
 * batch step) with the budget of its AdminComment's budget line
 * (budget_line.h). No lock and no history: an apply reads the comment,
 * applies, and writes it back with every other line kept byte for byte;
 * the attempt index makes a replayed apply change nothing. The comment as
 * last read or written is kept, so that one callback reads once.
 */
typedef struct {
	rb_store store;
	const rb_record *ident;
	rb_comment_io io;
	bool cached;
	char comment[RB_ADMIN_COMMENT_MAX + 1];
	char where[RB_JOB_ADDR_MAX + 32];
} rb_store_line;

/* ident (its job_id is the only job this store knows) must outlive it. */
rb_store *rb_store_line_init(rb_store_line *s, const rb_record *ident,
			     const rb_comment_io *io);
/* Forget the comment kept: the next call asks the controller again. */
void rb_store_line_forget(rb_store_line *s);

#endif
