/*
 * ack_legacy.h - the acknowledgement tree that plugins before 2026-12 left
 * in state_dir, and its removal (docs/security.md, "Upgrades").
 *
 * Those plugins gave each job a directory <state_dir>/<cluster>/ack/
 * <job_id>, owned by the job's user, holding attempt-<n> when attempt n
 * restored: a place in the shared state_dir where a user could write
 * anything, as deep and as wide as they liked. Nothing writes it any more.
 * An attempt that started before the upgrade may still have acknowledged
 * there, so it is read until `restore-budget gc` removes it; the plugin
 * never writes it, and this file is the only one that opens it.
 */
#ifndef RB_ACK_LEGACY_H
#define RB_ACK_LEGACY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Did attempt n of the job acknowledge in the old tree? Each step is opened
 * O_NOFOLLOW from the one before; ack/ must be root's (trust.h), the job's
 * directory its user's (uid), and the entry is only fstatat'd, never opened.
 * Anything else, or anything missing, is no.
 */
bool rb_ack_legacy_seen(const char *state_dir, const char *cluster,
			uint32_t job_id, uint32_t uid, int64_t attempt);

/* What rb_ack_legacy_remove found and did. */
typedef enum {
	RB_ACK_LEGACY_ABSENT,    /* no old tree (nor cluster directory) */
	RB_ACK_LEGACY_PRESENT,   /* dry run: the tree is there, untouched */
	RB_ACK_LEGACY_REMOVED,   /* the tree is gone */
	RB_ACK_LEGACY_LEFT,      /* some of it is left (now root's) */
	RB_ACK_LEGACY_UNTRUSTED, /* ack/ is not root's: not touched */
	RB_ACK_LEGACY_FAILED,    /* could not open or stat a directory */
} rb_ack_legacy_outcome;

typedef struct {
	rb_ack_legacy_outcome outcome;
	size_t entries;    /* REMOVED, LEFT: entries removed (or looked at) */
	unsigned uid;      /* UNTRUSTED: ack/'s owner */
	unsigned mode;     /* UNTRUSTED: ack/'s permission bits */
	int errnum;        /* FAILED: errno */
	bool at_ack;       /* FAILED: at ack/ itself, not state_dir/<cluster> */
} rb_ack_legacy_sweep;

/*
 * Remove <state_dir>/<cluster>/ack and everything in it, or with dry_run
 * only look whether it is there. Root only (it takes each directory from
 * its user before reading it). Never follows a symlink, refuses an ack/
 * that is not root's, and removes any depth with a bounded number of open
 * fds and a bounded recursion; at most 1,000,000 entries a run (the rest:
 * LEFT, for the next run). The caller words the outcome.
 */
void rb_ack_legacy_remove(const char *state_dir, const char *cluster,
			  bool dry_run, rb_ack_legacy_sweep *out);

#endif
