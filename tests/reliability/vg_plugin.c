/*
 * vg_plugin.c - load the built plugin the way slurmd and slurmstepd do and
 * drive its real SPANK callbacks through a job's life, so that valgrind
 * checks the glue too, not only the core. The host's SPANK API is played by
 * the functions below (exported with -rdynamic); libslurm calls the plugin
 * looks up at run time (slurm_load_job ...) are absent here, which also
 * exercises their fallbacks.
 *
 *   vg_plugin PLUGIN.so CONFIG WORKDIR
 *
 * A job whose restores all fail (exit 42 after a preemption) with M=1, R=2
 * must be refused in task_init at attempt 5 = R x (M+1) + 1; exit 0 if the
 * plugin did exactly that and exported what docs/rule.md, "What the job
 * sees", lists.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#define JOB_ID 4711u

static spank_context_t context;
static char job_env[32][2][512];
static int job_env_n;

void slurm_debug(const char *fmt, ...) { (void)fmt; }
void slurm_info(const char *fmt, ...) { (void)fmt; }
void slurm_verbose(const char *fmt, ...) { (void)fmt; }
void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

spank_context_t spank_context(void) { return context; }
int spank_remote(spank_t s) { (void)s; return context == S_CTX_REMOTE; }

spank_err_t spank_get_item(spank_t s, spank_item_t item, ...)
{
	va_list ap;
	spank_err_t rc = ESPANK_SUCCESS;

	(void)s;
	va_start(ap, item);
	switch (item) {
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = JOB_ID;
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = SLURM_BATCH_SCRIPT;
		break;
	default:
		rc = ESPANK_NOT_AVAIL;
	}
	va_end(ap);
	return rc;
}

static const char *lookup(const char *name)
{
	for (int i = 0; i < job_env_n; i++)
		if (strcmp(job_env[i][0], name) == 0)
			return job_env[i][1];
	return NULL;
}

spank_err_t spank_getenv(spank_t s, const char *name, char *buf, int len)
{
	const char *v = lookup(name);

	(void)s;
	if (!v && strcmp(name, "SLURM_CLUSTER_NAME") == 0)
		v = "vgc";
	if (!v && strcmp(name, "SLURM_RESTART_COUNT") == 0)
		v = getenv("SLURM_JOB_RESTART_COUNT");
	if (!v)
		return ESPANK_ENV_NOEXIST;
	snprintf(buf, (size_t)len, "%s", v);
	return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t s, const char *name, const char *value, int o)
{
	(void)s;
	(void)o;
	for (int i = 0; i < job_env_n; i++)
		if (strcmp(job_env[i][0], name) == 0) {
			snprintf(job_env[i][1], sizeof(job_env[i][1]), "%s", value);
			return ESPANK_SUCCESS;
		}
	if (job_env_n == 32)
		return ESPANK_ERROR;
	snprintf(job_env[job_env_n][0], sizeof(job_env[0][0]), "%s", name);
	snprintf(job_env[job_env_n][1], sizeof(job_env[0][1]), "%s", value);
	job_env_n++;
	return ESPANK_SUCCESS;
}

/* sbatch's call (the allocator context); vg_plugin drives the others. */
spank_err_t spank_job_control_setenv(spank_t s, const char *name,
				     const char *value, int o)
{
	(void)s;
	(void)name;
	(void)value;
	(void)o;
	return ESPANK_ERROR;
}

spank_err_t spank_unsetenv(spank_t s, const char *name)
{
	(void)s;
	for (int i = 0; i < job_env_n; i++)
		if (strcmp(job_env[i][0], name) == 0)
			job_env[i][1][0] = '\0';
	return ESPANK_SUCCESS;
}

/* The job asked for --checkpoint-dir=ckpt --max-failures=1 --restore-retries=2 */
spank_err_t spank_option_getopt(spank_t s, struct spank_option *opt, char **arg)
{
	(void)s;
	if (strcmp(opt->name, "checkpoint-dir") == 0)
		*arg = "ckpt";
	else if (strcmp(opt->name, "max-failures") == 0)
		*arg = "1";
	else if (strcmp(opt->name, "restore-retries") == 0)
		*arg = "2";
	else
		return ESPANK_ERROR;
	return ESPANK_SUCCESS;
}

spank_err_t spank_option_register(spank_t s, struct spank_option *opt)
{
	(void)s;
	(void)opt;
	return ESPANK_SUCCESS;
}

typedef int (*callback)(spank_t, int, char **);

static callback get(void *h, const char *name)
{
	callback cb = (callback)dlsym(h, name);

	if (!cb) {
		fprintf(stderr, "vg_plugin: %s not exported\n", name);
		exit(2);
	}
	return cb;
}

int main(int argc, char **argv)
{
	char arg[600], workdir[512], n_text[16];
	char *av[] = { arg };
	void *h;
	int refused_at = -1;

	if (argc != 4) {
		fprintf(stderr, "usage: vg_plugin PLUGIN.so CONFIG WORKDIR\n");
		return 2;
	}
	snprintf(arg, sizeof(arg), "config=%s", argv[2]);
	snprintf(workdir, sizeof(workdir), "%s", argv[3]);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "vg_plugin: %s\n", dlerror());
		return 2;
	}
	setenv("SLURM_JOB_ID", "4711", 1);
	setenv("SLURM_JOB_UID", "0", 1);
	setenv("SLURM_JOB_GID", "0", 1);
	setenv("SLURM_JOB_USER", "root", 1);
	setenv("SLURM_JOB_PARTITION", "low", 1);
	setenv("SLURM_CLUSTER_NAME", "vgc", 1);
	setenv("SLURM_JOB_WORK_DIR", workdir, 1);

	for (int n = 0; n < 8 && refused_at < 0; n++) {
		snprintf(n_text, sizeof(n_text), "%d", n);
		setenv("SLURM_JOB_RESTART_COUNT", n_text, 1);
		job_env_n = 0;

		context = S_CTX_JOB_SCRIPT;           /* every node's prolog */
		get(h, "slurm_spank_job_prolog")(NULL, 1, av);
		get(h, "slurm_spank_job_prolog")(NULL, 1, av);

		context = S_CTX_REMOTE;               /* the batch step */
		get(h, "slurm_spank_init")(NULL, 1, av);
		get(h, "slurm_spank_user_init")(NULL, 1, av);
		if (get(h, "slurm_spank_task_init")(NULL, 1, av) != 0)
			refused_at = n;
		else if (!lookup("RESTORE_BUDGET_ACK_FILE") ||
			 !lookup("RESTORE_BUDGET_RESTORES_LEFT") ||
			 atoi(lookup("RESTORE_BUDGET_ATTEMPT")) != n) {
			fprintf(stderr, "vg_plugin: attempt %d: environment incomplete\n", n);
			return 1;
		}
		/* attempt 0 is preempted, every restore fails with 42 */
		context = S_CTX_JOB_SCRIPT;
		if (n == 0) {
			setenv("SLURM_JOB_RESTART_COUNT", "1", 1);
			setenv("SLURM_JOB_EXIT_CODE2", "0:0", 1);
		} else {
			setenv("SLURM_JOB_EXIT_CODE2", "42:0", 1);
		}
		get(h, "slurm_spank_job_epilog")(NULL, 1, av);
	}
	dlclose(h);
	if (refused_at != 5) {
		fprintf(stderr, "vg_plugin: refused at attempt %d, want 5 = R x (M+1) + 1\n",
			refused_at);
		return 1;
	}
	printf("vg_plugin: the plugin refused attempt 5 after 4 failed restores\n");
	return 0;
}
