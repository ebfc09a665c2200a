/*
 * compat.h - what differs between the Slurm releases the plugin is built
 * for (22.05, 23.11, 24.11, 25.11, 26.05; README "Slurm releases").
 *
 * The plugin calls nothing of libslurm beyond spank.h's API (logging,
 * options, items, environment), whose signatures are the same in all of
 * them; everything it asks the controller goes through scontrol
 * (plugin/slurm/scontrol.h), whose command line is the same too. So this
 * layer is small: the facts that do differ, selected by
 * SLURM_VERSION_NUMBER, each checked at compile time.
 */
#ifndef RB_COMPAT_H
#define RB_COMPAT_H

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "restore_budget needs Slurm 22.05 or newer"
#endif

/* From 25.05 PrologEpilogTimeout is split into PrologTimeout and
 * EpilogTimeout: the name the slurmd-start message tells admins to set. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
#define RB_SLURM_TIMEOUT_KEYS "PrologTimeout/EpilogTimeout"
#else
#define RB_SLURM_TIMEOUT_KEYS "PrologEpilogTimeout"
#endif

#ifndef RB_SLURM_CONF_DEFAULT
#define RB_SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#endif

/* The batch step's id: a macro in every release, but check it is the one
 * the plugin compares S_JOB_STEPID against. */
_Static_assert(SLURM_BATCH_SCRIPT == 0xfffffffb,
	       "SLURM_BATCH_SCRIPT changed: review is_batch_step()");

#endif
