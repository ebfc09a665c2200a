/*
 * trust.h - the one test of whether root may rely on a file or directory.
 *
 * Root acts on the config file, state_dir and everything in the ledger:
 * each must be owned by root and writable by nobody else, or its owner or
 * a group member could change a budget or a limit (docs/security.md,
 * "Trust"). The callers word their own messages (what is refused and how
 * to fix it differs); the rule is this one.
 */
#ifndef RB_TRUST_H
#define RB_TRUST_H

#include <stdbool.h>
#include <sys/stat.h>

/* Owned by root and not writable by group or others. */
static inline bool rb_root_trusted(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

#endif
