/*
 * ack.h - the job's acknowledgement of a restore, in the job's own space.
 *
 * The job confirms that attempt n restored by creating a file
 * (RESTORE_BUDGET_ACK_FILE) in its checkpoint directory, or in its working
 * directory when it has none: directories the job can already write, on the
 * file system its checkpoints live on. Nothing of it is under state_dir,
 * where no user may write (docs/security.md, "The acknowledgement").
 *
 * Root contexts (epilog, prolog) look for it as the job's user, in a child
 * process with a deadline: the directory is the user's, maybe on an NFS
 * mount that squashes root or hangs, maybe full of the user's symlinks.
 * Neither the plugin nor root ever writes or removes the file: the job (or
 * its user) does; names are per attempt, so an old one never confirms a new
 * attempt.
 */
#ifndef RB_ACK_H
#define RB_ACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slurm/slurm.h"
#include "base/base.h"

/* the record (rule/record.h): declared, not included, so that the rule
 * (fallback.h, which needs the checkpoint search) and this folder do not
 * include each other */
struct rb_record;

/* The name's prefix: a dot file, so checkpoint lookup skips it. */
#define RB_ACK_PREFIX ".restore_budget-ack."

/* How long one look may take (a hung mount costs this, not the callback). */
#define RB_ACK_CHECK_MS 2000

/*
 * The acknowledgement file of attempt n:
 * <dir>/.restore_budget-ack.<cluster>.<job_id>.<attempt>, where dir is the
 * checkpoint directory (absolute, or relative to work_dir) or, without one,
 * work_dir. 0, or -1 if there is no absolute directory or it does not fit.
 */
int rb_ack_path(const char *work_dir, const char *checkpoint_dir,
		const char *cluster, uint32_t job_id, int64_t attempt,
		char *buf, size_t len);

/*
 * Is path a regular file owned by uid, as uid (with gid and uid's groups)
 * sees it? Looked at by a child that runs as that user (setpriv), killed at
 * the deadline. 1 yes, 0 no, -1 could not tell (err says why).
 */
int rb_ack_seen(const char *path, uint32_t uid, uint32_t gid,
		rb_deadline deadline, rb_err *err);

/*
 * Does the job's acknowledgement confirm the record's current attempt?
 * Its file in the job's own space (rb_ack_path, looked for with
 * rb_ack_seen as the job's user). Not being able to tell is not an
 * acknowledgement (a warning is logged). The one "acknowledged?" check:
 * every caller uses it.
 */
bool rb_ack_confirms(const struct rb_record *rec);

#endif
