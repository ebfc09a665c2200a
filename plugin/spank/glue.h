/*
 * glue.h - what the SPANK glue's files share (plugin/spank/; which file
 * owns which context: plugin.c, docs/architecture.md). None of these
 * symbols leaves the plugin (exports.map).
 */
#ifndef RB_GLUE_H
#define RB_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slurm/spank.h>

#include "config/config.h"
#include "base/base.h"
#include "rule/rule.h"
#include "lifecycle/lifecycle.h"
#include "slurm/slurm.h"

/* All the controller questions of one callback share this deadline: the
 * prolog and epilog must end well inside any PrologEpilogTimeout a site
 * sets (it is unlimited by default; docs/slurm-facts.md). */
#define RB_CALLBACK_DEADLINE_MS 10000

/* --- plugin.c: plugstack arguments and the process's helpers --- */
extern char slurm_bindir[RB_PATH_MAX];
extern char run_dir[RB_PATH_MAX];        /* node-local notes (node_note.h) */
rb_config *load_config(rb_err *err);
bool env_int64(const char *s, int64_t *out);
bool env_u32(const char *s, uint32_t *out);
const char *env_or(const char *name, const char *fallback);
const char *cluster_name(void);
const char *node_name(void);
rb_node this_node(const char *cluster); /* where ends are kept */
unsigned prolog_flags(void);
bool job_is_tracked(const rb_config *cfg, bool has_options);

/* --- options.c --- */
void register_options(spank_t sp);
bool read_options(spank_t sp, rb_overrides *job, char *ckpt_dir, size_t len);
/* what sbatch was given, or NULL if no option was */
const rb_overrides *submitted_options(void);

/* --- controller.c: squeue/scontrol with the callback's deadline --- */
void start_clock(void);
/* each names one job, an array task by its address (docs/arrays.md) */
void controller_account(const rb_job_ref *job, char *buf, size_t len);
const char *controller_interruption(void *ctx); /* ctx: an rb_job_ref */
void hold_exhausted(const rb_job_ref *job, const char *reason);
void controller_note_reason(const rb_job_ref *job, const char *kind,
			    const char *reason);
int64_t controller_restart_count(const rb_job_ref *job);
/* store = "controller": the job's AdminComment through squeue and scontrol
 * update (the line store's io); what the last read said of the job is in
 * info (restart count, state). */
typedef struct {
	rb_job_ref job;
	rb_ctl_job info;
} controller_job;
rb_comment_io controller_comment_io(controller_job *cj);

/* --- the contexts --- */
int allocator_post_opt(spank_t sp);         /* allocator.c */
void slurmd_init(void);                     /* slurmd.c */
void prolog(spank_t sp);                    /* job_script.c */
void epilog(void);                          /* job_script.c */
bool is_batch_step(spank_t sp);             /* batch.c */
void batch_user_init(spank_t sp);
int batch_task_init(spank_t sp);
void batch_task_exit(spank_t sp);

#endif
