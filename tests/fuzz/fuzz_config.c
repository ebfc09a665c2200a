/*
 * fuzz_config.c - libFuzzer target for the admin's config file
 * (rb_config_load, config.c): the libconfig text, the prescan for
 * @include and oversized integers, and every key's validation.
 *
 * The input is handed to rb_config_load as a real file without touching the
 * disk: an memfd (mode 0644, since a world-writable file is refused) opened
 * through its /proc/self/fd/N path, so the core's own open/fstat/read path
 * runs unchanged.
 *
 * Properties: a refused file leaves *out NULL and a one-line message that
 * names the file and holds no control byte (it reaches slurmd's log and the
 * admin's terminal); an accepted file resolves, for the top level and every
 * partition and account it names, to limits within the caps.
 *
 * libconfig 1.5 leaks its string buffer on some syntax errors
 * (leak:strbuf_append, tests/fuzz/lsan.supp).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "limits_check.h"

static int memfd = -1;
static char path[64];

static void resolve_all(const rb_config *cfg)
{
	rb_limits l;
	char warn[RB_ERR_MAX];
	size_t i, j;

	rb_config_resolve(cfg, NULL, NULL, NULL, &l, warn, sizeof(warn));
	check_resolved(cfg, &l, "top level");
	for (i = 0; i < cfg->n_partitions; i++) {
		rb_config_resolve(cfg, cfg->partitions[i].name, NULL, NULL, &l,
				  warn, sizeof(warn));
		check_resolved(cfg, &l, cfg->partitions[i].name);
		for (j = 0; j < cfg->n_accounts; j++) {
			rb_config_resolve(cfg, cfg->partitions[i].name,
					  cfg->accounts[j].name, NULL, &l,
					  warn, sizeof(warn));
			check_resolved(cfg, &l, cfg->accounts[j].name);
		}
	}
	for (j = 0; j < cfg->n_accounts; j++) {
		rb_config_resolve(cfg, NULL, cfg->accounts[j].name, NULL, &l,
				  warn, sizeof(warn));
		check_resolved(cfg, &l, cfg->accounts[j].name);
	}
	FUZZ_CHECK(cfg->state_dir && cfg->state_dir[0] == '/',
		   "state_dir not absolute");
	FUZZ_CHECK(cfg->checkpoint_pattern[0] &&
		   !strchr(cfg->checkpoint_pattern, '/'), "bad pattern");
	FUZZ_CHECK(cfg->checkpoint_latest[0] &&
		   cfg->checkpoint_latest[0] != '.' &&
		   !strchr(cfg->checkpoint_latest, '/'), "bad latest");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rb_config *cfg = (rb_config *)1;
	rb_err err;
	int rc;

	fuzz_quiet();
	if (memfd < 0) {
		memfd = memfd_create("rb-fuzz-config", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create");
		FUZZ_CHECK(fchmod(memfd, 0644) == 0, "fchmod");
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate");
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");

	memset(&err, 0, sizeof(err));
	rc = rb_config_load(path, &cfg, &err);
	if (rc < 0) {
		FUZZ_CHECK(cfg == NULL, "refused but *out set");
		FUZZ_CHECK(fuzz_err_ok(&err), "refused without a message");
		FUZZ_CHECK(strncmp(err.msg, path, strlen(path)) == 0,
			   "message does not start with the file: '%s'",
			   err.msg);
		check_printable(err.msg, "config error");
		return 0;
	}
	FUZZ_CHECK(rc == 0 && cfg, "rc %d", rc);
	FUZZ_CHECK(strcmp(cfg->path, path) == 0, "cfg->path");
	resolve_all(cfg);
	rb_config_free(cfg);
	return 0;
}
