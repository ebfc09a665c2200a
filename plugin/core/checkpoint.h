/*
 * checkpoint.h - find the newest checkpoint in a job's directory
 * (docs/rule.md, "Finding the checkpoint"). Runs with the caller's
 * credentials: the plugin calls it as the
 * job's user (user_init), never as root. Reads only; never writes, renames or
 * deletes anything in the directory.
 */
#ifndef RB_CHECKPOINT_H
#define RB_CHECKPOINT_H

#include <stddef.h>

#include "diag.h"

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
 * starting with '.' or ending in ".tmp"/".partial" are skipped.
 * Returns 1 and the absolute path in out; 0 if there is none; -1 with err if
 * the directory cannot be read (missing, permission) or a bound was hit.
 */
int rb_checkpoint_find(const char *work_dir, const char *dir,
		       const char *pattern, const char *latest,
		       char *out, size_t outlen, rb_err *err);

#endif
