/*
 * checkpoint.h - find the newest checkpoint in a job's directory
 * (docs/rule.md, "Finding the checkpoint"). Runs with the caller's
 * credentials: the plugin calls it as the
 * job's user (user_init), never as root. Reads only; never writes, renames or
 * deletes anything in the directory.
 */
#ifndef RB_CHECKPOINT_H
#define RB_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/base.h"

/* At most this many directory entries are examined (a bound on hostile or
 * huge directories); newer entries beyond it may be missed, with a warning. */
#define RB_CHECKPOINT_SCAN_MAX 100000

/*
 * dir: the checkpoint directory; a relative one is taken from work_dir.
 * pattern: fnmatch pattern for entries ("checkpoint*").
 * latest: name of the pointer entry ("latest"): a symlink, or a regular file
 *   whose first line names the checkpoint; it wins when it resolves to an
 *   existing entry.
 * Otherwise the newest entry matching pattern (mtime, then name). Names
 * starting with '.' or ending in ".tmp"/".partial" are skipped, and so is
 * an entry (or a pointer, or what either leads to) owned by another user
 * than the caller (the job's user) or root: as if absent, with a warning.
 * Returns 1 and the absolute path in out; 0 if there is none; -1 with err if
 * the directory cannot be read (missing, permission) or a bound was hit.
 */
int rb_checkpoint_find(const char *work_dir, const char *dir,
		       const char *pattern, const char *latest,
		       char *out, size_t outlen, rb_err *err);

/* A file's identity: a file written again under the same name is another
 * checkpoint (docs/rule.md, "Checkpoint fallback"). ino 0 = unknown. */
typedef struct {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
} rb_file_id;

/* Checkpoints the search must pass over: a path and the file it was. */
typedef struct {
	const char *path;
	rb_file_id id;
} rb_ckpt_mark;

typedef struct {
	const rb_ckpt_mark *mark;
	size_t n;
} rb_ckpt_marks;

void rb_file_id_of_stat(const struct stat *st, rb_file_id *id);

/* The identity of path (stat, as the caller). 0, or -1 (id zeroed). */
int rb_file_id_of(const char *path, rb_file_id *id);

bool rb_file_id_equal(const rb_file_id *a, const rb_file_id *b);

/* "dev:ino:size:mtime_ns" into buf; -1 if it does not fit. */
int rb_file_id_format(const rb_file_id *id, char *buf, size_t len);
/* Its inverse: 0, or -1 (malformed: *id zeroed). */
int rb_file_id_parse(const char *s, size_t n, rb_file_id *id);

/* Is the file at path (identity *id) one of marks: same path and same
 * identity? */
bool rb_ckpt_marked(const rb_ckpt_marks *marks, const char *path,
		    const rb_file_id *id);

/*
 * rb_checkpoint_find, passing over every checkpoint in skip: the `latest`
 * target when it is one of them, and every such entry of the scan. skip
 * NULL or empty: exactly rb_checkpoint_find.
 */
int rb_checkpoint_find_except(const char *work_dir, const char *dir,
			      const char *pattern, const char *latest,
			      const rb_ckpt_marks *skip, char *out,
			      size_t outlen, rb_err *err);

#endif
