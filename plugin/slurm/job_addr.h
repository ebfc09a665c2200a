/*
 * job_addr.h - reading a job's address as Slurm's commands write it: "J"
 * for a job, "A_T" for task T of job array A (rb_job_addr in record.h
 * writes it), and squeue's lines of an array's tasks.
 *
 * Pure (no I/O, no Slurm): the CLI uses both to take `123_4` wherever it
 * takes a job id and to show an array's tasks that have not started yet
 * (contrib/cli/README.md, "Job arrays"); tests/unit/test_job_addr.c.
 */
#ifndef RB_JOB_ADDR_H
#define RB_JOB_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slurm's NO_VAL (0xfffffffe) and INFINITE mean "no task": a task id is
 * below both. */
#define RB_TASK_ID_MAX 4294967293u

/* What a JOB argument names. */
typedef struct {
	uint32_t id;      /* the job id; with task, the array's job id */
	bool task;        /* "A_T": task task_id of array id */
	uint32_t task_id;
} rb_job_arg;

/* Parse "J" or "A_T": decimal digits only (no sign, blank or other
 * character), J and A in 1..4294967295, T in 0..RB_TASK_ID_MAX. 0, or -1
 * for anything else ("123_", "_4", "123_x", "123_4_5", "123_[5]"). */
int rb_job_arg_parse(const char *s, rb_job_arg *out);

/* One line of `squeue --noheader --jobs A --Format=JobID:0|,JobArrayID:0|,
 * ArrayTaskID:0|,State:0|` about array A: a task ("123_4|4|RUNNING") or
 * the tasks not started yet ("123_[5-999%4]|5-999%4|PENDING"). */
#define RB_SQUEUE_ADDR_MAX 256
typedef struct {
	uint32_t job_id;                /* JobID */
	char addr[RB_SQUEUE_ADDR_MAX];  /* JobArrayID, as squeue wrote it */
	bool not_started;               /* addr names a set: "A_[...]" */
	uint32_t task_id;               /* the task, when !not_started */
	char state[32];                 /* "PENDING", "RUNNING", ... */
} rb_squeue_task;

/*
 * Parse that output (NUL-terminated text) for array_id: fill out[0..max-1]
 * with its lines of array array_id, in squeue's order, and set *n (lines
 * beyond max are counted in *n but not stored). A line of another job
 * (a job that is no array prints its id without "_") is skipped. 0, or -1
 * if a line of the array is malformed (an unexpected answer: say so rather
 * than guess).
 */
int rb_squeue_array_parse(const char *text, uint32_t array_id,
			  rb_squeue_task *out, size_t max, size_t *n);

/*
 * --checkpoint-dir of a job array's task, one directory per task
 * (docs/arrays.md, "One checkpoint directory per task"): the patterns of
 * sbatch's --output, "%A" the array's job id, "%a" the task id, "%j" the
 * job id, "%%" one '%'. For a job that is no array task (array_job_id 0),
 * %A is its job id and %a is "0". Any other '%' is kept as it is. Returns 0,
 * or -1 if the result does not fit len bytes (out is then dir, unexpanded,
 * or "" if that does not fit either).
 */
int rb_checkpoint_dir_expand(const char *dir, uint32_t job_id,
			     uint32_t array_job_id, uint32_t array_task_id,
			     char *out, size_t len);

#endif
