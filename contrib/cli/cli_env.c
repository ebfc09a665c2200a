/*
 * cli_env.c - where the CLI's inputs come from: the config file, the
 * cluster's name, the invoking user, the ledger.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifecycle/lifecycle.h"
#include "slurm/slurm.h"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

void cli_choose_config(cli_ctx *ctx, const char *opt_config)
{
	const char *env = env_nonempty("RESTORE_BUDGET_CONFIG");

	ctx->config_explicit = true;
	if (opt_config) {
		ctx->config_path = opt_config;
	} else if (env) {
		ctx->config_path = env;
	} else {
		ctx->config_explicit = false;
		/* Like the plugin: an absent default file means built-in
		 * defaults; any other problem with it is reported. */
		if (access(RB_DEFAULT_CONFIG_PATH, F_OK) < 0 && errno == ENOENT)
			ctx->config_path = NULL;
		else
			ctx->config_path = RB_DEFAULT_CONFIG_PATH;
	}
}

int cli_load_config(cli_ctx *ctx)
{
	rb_err err;

	if (ctx->cfg)
		return CLI_OK;
	if (!ctx->config_path) {
		ctx->cfg = rb_config_defaults();
		if (!ctx->cfg) {
			cli_error("out of memory");
			return CLI_EDATA;
		}
		return CLI_OK;
	}
	if (rb_config_load(ctx->config_path, &ctx->cfg, &err) < 0) {
		cli_error("%s", err.msg);
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
		conf = env_nonempty("SLURM_CONF");
		if (rb_slurmconf_cluster_name(conf ? conf : CLI_SLURM_CONF,
					      ctx->cluster, sizeof(ctx->cluster),
					      &err) == 0) {
			name = ctx->cluster;
			from = conf ? conf : CLI_SLURM_CONF;
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
