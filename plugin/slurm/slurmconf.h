/*
 * slurmconf.h - what is read from slurm.conf: PrologFlags, RequeueExit and
 * (for the CLI) ClusterName. Every key is read one way: the last line that
 * sets it wins, as in Slurm; keys are case-insensitive.
 *
 * With PrologFlags=RunInJob (Slurm 24.05+) the extern step runs the prolog
 * and the epilog, and the epilog sees neither the job's exit code nor a
 * bumped restart count (docs/slurm-facts.md, "PrologFlags"), so the batch
 * step records how each attempt ended instead. Slurm does not tell a SPANK
 * plugin its flags, so the plugin reads them from slurm.conf (SLURM_CONF).
 *
 * RequeueExit: the codes Slurm requeues a job for. The code a job exits
 * with when its restore fails (RESTORE_BUDGET_REQUEUE_EXIT) must be one of
 * them (docs/rule.md, "The requeue code").
 */
#ifndef RB_SLURMCONF_H
#define RB_SLURMCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

enum {
	RB_PF_ALLOC = 1 << 0,
	RB_PF_CONTAIN = 1 << 1,
	RB_PF_RUN_IN_JOB = 1 << 2,
};

/* Parse the PrologFlags of slurm.conf text (the last PrologFlags line wins,
 * as in Slurm; keys and flags are case-insensitive). Returns the RB_PF_*
 * bits. Pure (tests/unit/test_slurmconf.c). */
unsigned rb_slurmconf_parse_prolog_flags(const char *text);

/* Read them from the file at path: the bits, or -1 with err set. `Include`
 * lines are not followed (see docs/slurm-facts.md). */
int rb_slurmconf_prolog_flags(const char *path, rb_err *err);

#define RB_REQUEUE_CODE_MAX 255

/* RequeueExit of slurm.conf: "N,N-M,..." (slurm.conf(5)). */
typedef struct {
	bool set;        /* a RequeueExit line was found */
	int first;       /* the first code > 0 written, or -1 (none) */
	uint8_t codes[(RB_REQUEUE_CODE_MAX + 1) / 8];
	char text[128];  /* the list as written, for messages */
} rb_requeue_exit;

/* Parse the RequeueExit of slurm.conf text (the last line wins; the key is
 * case-insensitive; tokens that are not codes 0..255 are skipped). Pure. */
void rb_slurmconf_parse_requeue_exit(const char *text, rb_requeue_exit *out);

/* Read it from the file at path: 0 (out->set false if the file has none),
 * or -1 with err set. */
int rb_slurmconf_requeue_exit(const char *path, rb_requeue_exit *out,
			      rb_err *err);

/* Does RequeueExit name code? */
bool rb_requeue_exit_has(const rb_requeue_exit *r, int code);

/* ClusterName of slurm.conf text (the last line wins), lower-cased as
 * Slurm does (SLURM_CLUSTER_NAME, which keys the ledger, is too), into out
 * (len bytes): 0, or -1 if no line sets it, the last one sets it empty, or
 * it does not fit. Pure. */
int rb_slurmconf_parse_cluster_name(const char *text, char *out, size_t len);

/* Read it from the file at path: 0, 1 (no usable ClusterName), or -1 with
 * err set (the file cannot be read). */
int rb_slurmconf_cluster_name(const char *path, char *out, size_t len,
			      rb_err *err);

#endif
