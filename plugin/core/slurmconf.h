/*
 * slurmconf.h - the one slurm.conf setting the plugin must know: PrologFlags.
 *
 * With PrologFlags=RunInJob (Slurm 24.05+) the extern step runs the prolog
 * and the epilog, and the epilog sees neither the job's exit code nor a
 * bumped restart count (docs/slurm-facts.md, "PrologFlags"), so the batch
 * step records how each attempt ended instead. Slurm does not tell a SPANK
 * plugin its flags, so the plugin reads them from slurm.conf (SLURM_CONF).
 */
#ifndef RB_SLURMCONF_H
#define RB_SLURMCONF_H

#include <stdbool.h>

#include "diag.h"

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

#endif
