/*
 * cli_upgrade.c - what `gc` says about the acknowledgement tree that
 * plugins before 2026-12 left in state_dir (<state_dir>/<cluster>/ack).
 *
 * The core reads and removes that tree (plugin/core/ack_legacy.c, see
 * docs/security.md, "Upgrades"); this file only words the outcome.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "ack_legacy.h"

int cli_remove_legacy_acks(const cli_ctx *ctx, bool dry_run)
{
	char where[RB_PATH_MAX + RB_NAME_MAX + 2];
	rb_ack_legacy_sweep s;

	snprintf(where, sizeof(where), "%s/%s", ctx->cfg->state_dir,
		 ctx->cluster);
	rb_ack_legacy_remove(ctx->cfg->state_dir, ctx->cluster, dry_run, &s);
	switch (s.outcome) {
	case RB_ACK_LEGACY_ABSENT:
		return 0;
	case RB_ACK_LEGACY_PRESENT:
		printf("would remove %s/ack (acknowledgement directories of plugins before 2026-12)\n",
		       where);
		return 0;
	case RB_ACK_LEGACY_REMOVED:
		printf("removed %s/ack (%zu entries; acknowledgement directories of plugins before 2026-12)\n",
		       where, s.entries);
		return 0;
	case RB_ACK_LEGACY_LEFT:
		cli_error("%s/ack: %zu entries removed, some are left (now root's); run gc again",
			  where, s.entries);
		return -1;
	case RB_ACK_LEGACY_UNTRUSTED:
		cli_error("%s/ack: owned by uid %u with mode %04o, not root's: not touched; check who changed it",
			  where, s.uid, s.mode);
		return -1;
	case RB_ACK_LEGACY_FAILED:
	default:
		if (s.at_ack)
			cli_error("%s/ack: %s", where, strerror(s.errnum));
		else
			cli_error("%s: %s", where, strerror(s.errnum));
		return -1;
	}
}
