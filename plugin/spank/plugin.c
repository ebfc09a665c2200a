/*
 * plugin.c - the SPANK plugin: its name, its plugstack.conf arguments and
 * the entry points, each handing its context to one file (glue.h). Its own
 * arguments are config=, slurm_bindir= and run_dir=; every other KEY=VALUE
 * is a key of the config file, read with it at each load_config.
 *
 * It gathers each callback's inputs from Slurm and hands them to the core
 * (plugin/lifecycle/lifecycle.c). Which callback does what (docs/architecture.md,
 * "Where each event happens"):
 *   sbatch         init: register options; init_post_opt: refuse over-cap values
 *   slurmd         init: load and check the config, log loudly
 *   job_prolog     (root, every node) leave a node-local note of the job
 *   user_init      (batch step, uid 0, euid the job's user) claim the note,
 *                  preview the start; find the checkpoint as the user;
 *                  then charge the previous attempt and record this one,
 *                  its phase and checkpoint in one locked write; export env
 *   task_init      (job user) refuse an exhausted attempt: the job ends FAILED 1:0
 *   job_epilog     (root, every node) record how the attempt ended
 * Every callback returns 0 except task_init's refusal and sbatch's option
 * checks: a failing prolog, epilog, user_init or slurmd init drains the node
 * or stops slurmd.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "slurm/slurm.h"

#include "compat.h"
#include "store/store.h"

#include "glue.h"

SPANK_PLUGIN(restore_budget, 1);

/* plugstack.conf arguments */
static char config_path[RB_PATH_MAX] = RB_DEFAULT_CONFIG_PATH;
static bool config_path_given;
char slurm_bindir[RB_PATH_MAX] = RB_SLURM_BINDIR_DEFAULT;
char run_dir[RB_PATH_MAX] = RB_RUN_DIR_DEFAULT;
/* every argument as Slurm gave it: the config's keys among them are read
 * with the file at each load_config (docs/rule.md, "Plugstack
 * arguments") */
static int plug_ac;
static char **plug_av;

static void slurm_sink(rb_log_level level, const char *msg)
{
	switch (level) {
	case RB_LOG_ERROR:
		slurm_error("%s", msg);
		break;
	case RB_LOG_WARNING:
	case RB_LOG_INFO:
		slurm_info("%s", msg);
		break;
	default:
		slurm_debug("%s", msg);
		break;
	}
}

static int parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "config=", 7) == 0) {
			if (rb_strlcpy(config_path, av[i] + 7,
				       sizeof(config_path)) < 0)
				return -1;
			config_path_given = true;
		} else if (strncmp(av[i], "slurm_bindir=", 13) == 0) {
			if (av[i][13] != '/' ||
			    rb_strlcpy(slurm_bindir, av[i] + 13,
				       sizeof(slurm_bindir)) < 0)
				return -1;
		} else if (strncmp(av[i], "run_dir=", 8) == 0) {
			if (av[i][8] != '/' ||
			    rb_strlcpy(run_dir, av[i] + 8, sizeof(run_dir)) < 0)
				return -1;
		} else if (!strchr(av[i], '=')) {
			char shown[200];

			rb_config_quote(av[i], shown, sizeof(shown));
			rb_log(RB_LOG_ERROR,
			       "plugstack.conf: unknown argument \"%s\" (known: config=PATH, slurm_bindir=/DIR/OF/SQUEUE/AND/SCONTROL, run_dir=/NODE/LOCAL/DIR, and every key of the config file as KEY=VALUE)",
			       shown);
			return -1;
		} /* else a config key: checked by every load_config */
	}
	return 0;
}

/* Load the config file and the config keys among the arguments over it;
 * the default path may be absent (then built-in defaults and arguments:
 * a configless node has no file). */
rb_config *load_config(rb_err *err)
{
	rb_config *cfg = NULL;
	const char *path = config_path;

	if (!config_path_given && access(config_path, F_OK) < 0 &&
	    errno == ENOENT)
		path = NULL;
	if (rb_config_load_args(path, plug_ac, plug_av, "plugstack.conf", &cfg,
				err) < 0)
		return NULL;
	return cfg;
}

bool env_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < 0)
		return false;
	*out = v;
	return true;
}

bool env_u32(const char *s, uint32_t *out)
{
	int64_t v;

	if (!env_int64(s, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v && *v ? v : fallback;
}

/* The cluster's name keys the ledger: the same job id on two clusters
 * sharing a state_dir must not share a budget. */
const char *cluster_name(void)
{
	return env_or("SLURM_CLUSTER_NAME", "cluster");
}

/* This node's name for its notes: the same in the prolog, the batch step
 * and the epilog, which all run on this host (node_note.h). */
const char *node_name(void)
{
	static char host[RB_NAME_MAX];

	if (!host[0] && gethostname(host, sizeof(host) - 1) < 0)
		rb_strlcpy(host, "localhost", sizeof(host));
	return host;
}

rb_node this_node(const char *cluster)
{
	return (rb_node){ run_dir, node_name(), cluster, time(NULL) };
}

/* PrologFlags from slurm.conf, read once per process (slurmconf.h). */
unsigned prolog_flags(void)
{
	static int flags = -1;
	const char *path = env_or("SLURM_CONF", RB_SLURM_CONF_DEFAULT);
	rb_err err;

	if (flags < 0) {
		flags = rb_slurmconf_prolog_flags(path, &err);
		if (flags < 0) {
			rb_log(RB_LOG_INFO, "cannot read PrologFlags: %s; assuming none",
			       err.msg);
			flags = 0;
		}
	}
	return (unsigned)flags;
}

bool job_is_tracked(const rb_config *cfg, bool has_options)
{
	return cfg->track == RB_TRACK_ALL || has_options;
}

/* --- SPANK entry points -------------------------------------------------------- */

/* Every callback starts here: the prolog and epilog processes never run
 * slurm_spank_init (verified on 22.05), so nothing may depend on it. */
static void enter(int ac, char **av)
{
	static bool entered;

	if (entered)
		return;
	entered = true;
	rb_log_set_sink(slurm_sink);
	plug_ac = ac;
	plug_av = av;
	if (parse_args(ac, av) < 0)
		rb_log(RB_LOG_ERROR, "bad plugstack.conf arguments; using %s",
		       config_path);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	enter(ac, av);
	register_options(sp);
	if (ctx == S_CTX_SLURMD)
		slurmd_init(); /* never fails: slurmd must stay up */
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_context() != S_CTX_ALLOCATOR)
		return 0;
	return allocator_post_opt(sp);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	prolog(sp);
	return 0; /* never: a failing prolog drains the node */
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_remote(sp) && is_batch_step(sp))
		batch_user_init(sp);
	return 0; /* never: a failing user_init drains the node */
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	return batch_task_init(sp); /* the one safe refusal */
}
/* store = "controller": a self-ended attempt's end, before the batch step
 * reports completion (batch.c). */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	enter(ac, av);
	if (spank_remote(sp) && is_batch_step(sp))
		batch_task_exit(sp);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	(void)sp; /* the epilog reads only its environment */
	enter(ac, av);
	epilog();
	return 0; /* never: a failing epilog drains the node */
}
