/*
 * fallback.h - checkpoint fallback (docs/rule.md, "Checkpoint fallback"):
 * a checkpoint whose restores failed a whole group is marked bad in the
 * job's record (never touched on disk), and the next attempt is handed the
 * newest checkpoint not marked bad. The engine's rule is unchanged: this
 * only decides which checkpoint an attempt is handed.
 */
#ifndef RB_FALLBACK_H
#define RB_FALLBACK_H

#include <stdbool.h>
#include <stddef.h>

#include "user/user.h"
#include "base/base.h"
#include "engine.h"
#include "record.h"

/* The bad list of a record, parsed: marks point into paths. */
typedef struct {
	rb_ckpt_mark mark[RB_FALLBACK_BAD_MAX];
	char paths[RB_FALLBACK_LIST_MAX];
	size_t n;
} rb_bad_list;

/* What the batch step handed an attempt (rb_lifecycle_begin). */
typedef struct {
	const char *checkpoint;  /* "" or NULL = none */
	rb_file_id id;           /* ino 0 = not taken (fallback off) */
	const char *from;        /* the bad newest, when checkpoint is older */
} rb_handed;

/* The checkpoint an attempt is handed with fallback on. */
typedef struct {
	char path[RB_PATH_MAX];  /* "" = none found */
	char from[RB_PATH_MAX];  /* the bad newest when path is older, else "" */
	rb_file_id id;           /* path's identity (ino 0 = unknown) */
} rb_fallback_choice;

/* The attempt about to be charged, as rb_engine_start will see it. */
typedef struct {
	int64_t attempt;
	char path[RB_PATH_MAX];
	char id[RB_FILE_ID_TEXT_MAX];
} rb_fallback_prev;

/* rec's bad list; a malformed entry is left out. */
void rb_fallback_bad_list(const rb_record *rec, rb_bad_list *out);

/* Mark path (identity *id) bad in rec: 1 marked, 0 it was already, -1 its
 * path is too long for the list (not marked). The oldest entries are
 * dropped to keep at most RB_FALLBACK_BAD_MAX. */
int rb_fallback_mark_bad(rb_record *rec, const char *path,
			 const rb_file_id *id);

/* Before rb_engine_start: the attempt it will charge. */
void rb_fallback_before_start(const rb_record *rec, rb_fallback_prev *prev);

/*
 * After rb_engine_start charged prev with c under limits l: count the
 * streak of failed restores of one file and, with fallback on, mark it bad
 * when its group is charged (grouped: RB_CHARGE_RESTORE_CONVERTED after R
 * failed restores of that same file; ray: RB_CHARGE_RESTORE_OVER). The new
 * attempt starts with no identity and no fallback. true if prev was marked.
 */
bool rb_fallback_after_charge(rb_record *rec, const rb_fallback_prev *prev,
			      const rb_charge *c, const rb_limits *l,
			      bool enabled);

/* The batch step reports what the attempt was handed. */
void rb_fallback_record_handed(rb_record *rec, const rb_handed *h);

/*
 * As the job's user: the newest checkpoint of dir not marked bad in rec,
 * with the bad newest in out->from when an older one is handed; with none
 * left, the last one handed out (rec's checkpoint). Returns what
 * rb_checkpoint_find returns for the newest (1, 0 none, -1 error).
 */
int rb_fallback_choose(const rb_record *rec, const char *dir,
		       const char *pattern, const char *latest,
		       rb_fallback_choice *out, rb_err *err);

#endif
