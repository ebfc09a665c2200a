/*
 * step.h - what the batch step tells the job: its RESTORE_BUDGET_*
 * environment, the words of a refusal, and the attempt a catch-up records.
 * The SPANK glue (plugin/spank/batch.c) only sets what this computes
 * (docs/architecture.md, "One attempt").
 */
#ifndef RB_STEP_H
#define RB_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "record.h"

#define RB_STEP_VAR_COUNT 15
/* RESTORE_BUDGET_REQUEUE_EXIT's slot (docs/rule.md, "The requeue code") */
#define RB_STEP_VAR_REQUEUE_EXIT 13

/* One RESTORE_BUDGET_* variable. */
typedef struct {
	const char *name;
	char value[RB_PATH_MAX + 64];
	bool set;       /* false: the job does not get it (no ack file) */
	bool of_record; /* a number of the ledger's record: wrong if the
			 * record is behind the attempt (withdrawn then) */
} rb_step_var;

typedef struct {
	rb_step_var var[RB_STEP_VAR_COUNT];
} rb_step_env;

/* The job's environment for attempt `attempt` of rec's job. */
void rb_step_env_of(const rb_record *rec, int64_t attempt, rb_phase phase,
		    const char *checkpoint, rb_step_env *out);

/* Give the job RESTORE_BUDGET_REQUEUE_EXIT=code (config.h); code 0
 * (unknown) leaves it unset. */
void rb_step_env_set_requeue_exit(rb_step_env *env, int code);

/* The refusal the job reads on its stderr (one line, with "\n"). */
void rb_step_refusal(const rb_record *rec, int64_t attempt,
		     const char *config_path, char *buf, size_t len);

/* Slurm ran no prolog: is this batch step a new attempt? Yes when the
 * recorded attempt has ended, and also when it has no end but the
 * controller's restart count (-1 = unknown) is past it: its end was lost
 * (state_dir unwritable in its epilog, its node died) and Slurm relaunched
 * without a prolog. Else the recorded attempt is this one. */
bool rb_step_begins_attempt(const rb_record *rec, int64_t controller_count);

/* The attempt a batch step records when Slurm ran no prolog: the
 * controller's restart count when it is ahead of the record (-1 =
 * unknown), else the one after the record's. */
int64_t rb_step_catch_up_attempt(int64_t controller_count,
				 const rb_record *rec);

#endif
