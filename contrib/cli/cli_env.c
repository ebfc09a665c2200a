/*
 * cli_env.c - where the CLI's inputs come from: the plugin's plugstack.conf
 * arguments and config file, the cluster's name, the invoking user, the
 * ledger.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifecycle/lifecycle.h"
#include "slurm/slurm.h"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

/* ---- Slurm's own commands ------------------------------------------------- */

const char *cli_slurm_conf(void)
{
	const char *conf = env_nonempty("SLURM_CONF");

	return conf ? conf : CLI_SLURM_CONF;
}

const char *cli_slurm_bindir(void)
{
	const char *d = getenv("RESTORE_BUDGET_SLURM_BINDIR");

	return d && d[0] == '/' ? d : RB_SLURM_BINDIR_DEFAULT;
}

int cli_slurm_run(const char *tool, const char *const args[],
		  rb_deadline deadline, char *out, size_t len, rb_err *err)
{
	char prog[RB_PATH_MAX + 16], conf[RB_PATH_MAX + 16];
	const char *argv[16] = { prog };
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
			       conf, NULL };

	snprintf(prog, sizeof(prog), "%s/%s", cli_slurm_bindir(), tool);
	snprintf(conf, sizeof(conf), "SLURM_CONF=%s", cli_slurm_conf());
	for (size_t i = 0; args[i] && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[i + 1] = args[i];
	return rb_child_run(argv, envp, deadline, out, len, err);
}

/* ---- the plugstack.conf arguments (docs/rule.md, "Plugstack arguments") */

#define PLUG_INCLUDE_DEPTH 8

/* PlugStackConfig of the slurm.conf at path into out: the last line wins,
 * the key is case-insensitive, as Slurm reads it. 0, or -1 if none. */
static int plugstack_of_slurm_conf(const char *path, char *out, size_t len)
{
	FILE *fp = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		char *p = line + strspn(line, " \t");

		p[strcspn(p, "#\r\n")] = '\0';
		if (strncasecmp(p, "PlugStackConfig=", 16) != 0)
			continue;
		p += 16;
		p[strcspn(p, " \t")] = '\0';
		rc = rb_strlcpy(out, p, len) < 0 || !*p ? -1 : 0;
	}
	free(line);
	fclose(fp);
	return rc;
}

static int scan_plugstack(cli_ctx *ctx, const char *path, int depth);

/* include PATTERN: a glob, relative to the including file's directory. */
static int scan_include(cli_ctx *ctx, const char *from, const char *pattern,
			int depth)
{
	char full[RB_PATH_MAX * 2];
	const char *slash = strrchr(from, '/');
	glob_t g;
	int rc = 0;

	if (pattern[0] == '/' || !slash)
		snprintf(full, sizeof(full), "%s", pattern);
	else
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - from),
			 from, pattern);
	if (glob(full, 0, NULL, &g) != 0)
		return 0; /* nothing matches: nothing included */
	for (size_t i = 0; i < g.gl_pathc && rc == 0; i++)
		rc = scan_plugstack(ctx, g.gl_pathv[i], depth + 1);
	globfree(&g);
	return rc;
}

/* One line: 1 when it loads restore_budget.so (ctx->plug_* set). */
static int scan_line(cli_ctx *ctx, const char *path, unsigned no,
		     char *line, int depth)
{
	char *save = NULL, *kind, *so, *base;

	line[strcspn(line, "#\r\n")] = '\0';
	kind = strtok_r(line, " \t", &save);
	if (!kind)
		return 0;
	if (strcmp(kind, "include") == 0) {
		char *pattern = strtok_r(NULL, " \t", &save);

		return pattern ? scan_include(ctx, path, pattern, depth) : 0;
	}
	so = strtok_r(NULL, " \t", &save);
	base = so ? strrchr(so, '/') : NULL;
	if (!so || strcmp(base ? base + 1 : so, "restore_budget.so") != 0)
		return 0;
	snprintf(ctx->plug_where, sizeof(ctx->plug_where), "%s:%u", path, no);
	for (char *t = strtok_r(NULL, " \t", &save);
	     t && ctx->plug_ac < (int)(sizeof(ctx->plug_av) / sizeof(ctx->plug_av[0]));
	     t = strtok_r(NULL, " \t", &save))
		ctx->plug_av[ctx->plug_ac++] = t;
	return 1;
}

/* The arguments come only from a file only root can change, as the config
 * file (config_lex.c): they set the same limits, and root's gc and grant
 * use their state_dir. -2 (message printed) otherwise. */
static int trusted_line_file(FILE *fp, const char *path)
{
	struct stat st;
	char safe[RB_PATH_MAX * 3];

	if (fstat(fileno(fp), &st) == 0 && rb_root_trusted(&st))
		return 0;
	cli_safe(path, safe, sizeof(safe));
	cli_error("%s: refusing the restore_budget.so line of a file others than root may change: anyone could change the limits (run chown root %s; chmod go-w %s)",
		  safe, safe, safe);
	return -2;
}

/* The plugstack.conf at path: 1 found (the first restore_budget.so line
 * wins), 0 not there, -1 unreadable (errno), -2 refused (said). */
static int scan_plugstack(cli_ctx *ctx, const char *path, int depth)
{
	FILE *fp;
	char *line = NULL;
	size_t cap = 0;
	unsigned no = 0;
	int rc = 0;

	if (depth > PLUG_INCLUDE_DEPTH)
		return 0;
	if (!(fp = fopen(path, "re")))
		return depth == 0 ? -1 : 0;
	while (rc == 0 && getline(&line, &cap, fp) > 0) {
		no++;
		rc = scan_line(ctx, path, no, line, depth);
		if (rc == 1) {
			ctx->plug_line = line; /* plug_av points into it */
			line = NULL;
			rc = trusted_line_file(fp, path) < 0 ? -2 : 1;
		}
	}
	free(line);
	fclose(fp);
	return rc;
}

/* Where sbatch's plugstack.conf is, when --plugstack does not say. */
static void default_plugstack(char *out, size_t len)
{
	const char *conf = cli_slurm_conf();
	const char *slash;

	if (plugstack_of_slurm_conf(conf, out, len) == 0)
		return;
	slash = strrchr(conf, '/');
	snprintf(out, len, "%.*s/plugstack.conf",
		 slash ? (int)(slash - conf) : 1, slash ? conf : ".");
}

static int find_plugstack(cli_ctx *ctx, const char *opt_plugstack)
{
	char path[RB_PATH_MAX], safe[RB_PATH_MAX * 3];
	int rc;

	if (opt_plugstack)
		rb_strlcpy(path, opt_plugstack, sizeof(path));
	else
		default_plugstack(path, sizeof(path));
	rc = scan_plugstack(ctx, path, 0);

	if (rc == -2)
		return CLI_EDATA;
	if (rc >= 0 || !opt_plugstack)
		return CLI_OK;
	cli_error("%s: cannot read: %s (--plugstack)",
		  cli_safe(path, safe, sizeof(safe)), strerror(errno));
	return CLI_EDATA;
}

/* The config=PATH among the arguments, or NULL. */
static const char *plug_config(const cli_ctx *ctx)
{
	for (int i = 0; i < ctx->plug_ac; i++)
		if (strncmp(ctx->plug_av[i], "config=", 7) == 0 &&
		    ctx->plug_av[i][7])
			return ctx->plug_av[i] + 7;
	return NULL;
}

int cli_choose_config(cli_ctx *ctx, const char *opt_config,
		      const char *opt_plugstack)
{
	const char *env = env_nonempty("RESTORE_BUDGET_CONFIG");

	if (find_plugstack(ctx, opt_plugstack) != CLI_OK)
		return CLI_EDATA;
	ctx->config_explicit = true;
	if (opt_config) {
		ctx->config_path = opt_config;
	} else if (env) {
		ctx->config_path = env;
	} else if (plug_config(ctx)) {
		ctx->config_path = plug_config(ctx);
	} else {
		ctx->config_explicit = false;
		/* Like the plugin: an absent default file means built-in
		 * defaults; any other problem with it is reported. */
		if (access(RB_DEFAULT_CONFIG_PATH, F_OK) < 0 && errno == ENOENT)
			ctx->config_path = NULL;
		else
			ctx->config_path = RB_DEFAULT_CONFIG_PATH;
	}
	return CLI_OK;
}

int cli_load_config(cli_ctx *ctx)
{
	rb_err err;
	char safe[RB_ERR_MAX * 3];

	if (ctx->cfg)
		return CLI_OK;
	if (rb_config_load_args(ctx->config_path, ctx->plug_ac, ctx->plug_av,
				ctx->plug_where, &ctx->cfg, &err) < 0) {
		cli_error("%s", cli_safe(err.msg, safe, sizeof(safe)));
		return CLI_EDATA;
	}
	return CLI_OK;
}

int cli_choose_cluster(cli_ctx *ctx, const char *opt_cluster)
{
	const char *name = opt_cluster;
	const char *from = "--cluster";
	const char *conf;
	char safe[256];
	rb_err err;

	if (!name && (name = env_nonempty("SLURM_CLUSTER_NAME")))
		from = "SLURM_CLUSTER_NAME";
	if (!name) {
		/* read as the plugin reads slurm.conf: the last line wins, as
		 * in Slurm (slurmconf.h); a missing file is no name */
		conf = cli_slurm_conf();
		if (rb_slurmconf_cluster_name(conf, ctx->cluster,
					      sizeof(ctx->cluster), &err) == 0) {
			name = ctx->cluster;
			from = conf;
		}
	}
	if (!name) {
		name = CLI_DEFAULT_CLUSTER;
		from = "the default";
	}
	if (!rb_cluster_name_ok(name)) {
		cli_error("invalid cluster name '%s' (from %s): expected "
			  RB_CLUSTER_NAME_RULE,
			  cli_safe(name, safe, sizeof(safe)), from);
		return CLI_EUSAGE;
	}
	if (name != ctx->cluster)
		rb_strlcpy(ctx->cluster, name, sizeof(ctx->cluster));
	return CLI_OK;
}

void cli_invoking_user(char *buf, size_t len)
{
	const char *sudo = env_nonempty("SUDO_USER");
	struct passwd *pw;
	char login[256];

	if (sudo && geteuid() == 0 && strlen(sudo) < len) {
		rb_strlcpy(buf, sudo, len);
		return;
	}
	if (getlogin_r(login, sizeof(login)) == 0 && login[0]) {
		rb_strlcpy(buf, login, len);
		return;
	}
	pw = getpwuid(getuid());
	if (pw && pw->pw_name && pw->pw_name[0])
		rb_strlcpy(buf, pw->pw_name, len);
	else
		snprintf(buf, len, "uid %u", (unsigned)getuid());
}

int cli_open_ledger(const cli_ctx *ctx, rb_ledger_mode mode, rb_ledger **out)
{
	char path[RB_PATH_MAX + RB_NAME_MAX + 2];
	struct stat st;
	rb_err err;

	*out = NULL;
	/* Nothing recorded for this cluster yet is an empty ledger, not an
	 * error; the ledger itself checks everything else (ownership, mode,
	 * symlinks) when it opens the directory. */
	snprintf(path, sizeof(path), "%s/%s", ctx->cfg->state_dir,
		 ctx->cluster);
	if (lstat(path, &st) < 0 && errno == ENOENT) {
		/* ... but only in a trusted state_dir: an empty listing of a
		 * directory a user controls would be a lie (the read open
		 * checks state_dir's owner and mode before the cluster's). */
		int rc = rb_ledger_open_read(ctx->cfg->state_dir, ctx->cluster,
					     out, &err);

		if (rc < 0) {
			cli_error("%s", err.msg);
			return -1;
		}
		if (rc == 1)
			return 1;
		rb_ledger_close(*out); /* appeared meanwhile: open as asked */
		*out = NULL;
	}
	if (rb_ledger_open(ctx->cfg->state_dir, ctx->cluster, mode, out,
			   &err) < 0) {
		cli_error("%s", err.msg);
		return -1;
	}
	return 0;
}

int cli_open_scan(const cli_ctx *ctx, rb_ledger_mode mode, rb_ledger **out,
		  rb_record **rec)
{
	int r = cli_open_ledger(ctx, mode, out);

	*rec = NULL;
	if (r < 0)
		return -1;
	*rec = malloc(sizeof(**rec));
	if (!*rec) {
		rb_ledger_close(*out);
		*out = NULL;
		cli_error("out of memory");
		return -1;
	}
	return r;
}

int cli_read_job(const cli_ctx *ctx, uint32_t job_id, rb_record **out)
{
	rb_err err;
	int rc;

	*out = malloc(sizeof(**out));
	if (!*out) {
		cli_error("out of memory");
		return CLI_EDATA;
	}
	rc = rb_lifecycle_read(ctx->cfg, ctx->cluster, job_id, *out, &err);
	if (rc == 0)
		return CLI_OK;
	if (rc < 0) {
		cli_error("job %" PRIu32 ": %s", job_id, err.msg);
		rc = CLI_EDATA;
	} else {
		cli_error("job %" PRIu32 ": no record on cluster %s (not tracked, "
			  "removed by gc, or another cluster: see --cluster)",
			  job_id, ctx->cluster);
		rc = CLI_ENOTFOUND;
	}
	free(*out);
	*out = NULL;
	return rc;
}
