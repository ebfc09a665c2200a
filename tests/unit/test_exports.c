/*
 * test_exports.c - the built plugin exports what Slurm's loader looks up and
 * nothing of the core (exports.map), so the core cannot clash with symbols of
 * slurmd or slurmstepd, and it has no undefined symbol outside Slurm's API.
 * Its stack is not executable (linked with -z noexecstack: HARDEN_LD in the
 * Makefile).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

/*
 * The plugin is linked with -z now, so dlopen binds every symbol at once:
 * the host's SPANK API must be there. These stand-ins play the host (the
 * binary is linked with -rdynamic); they are never called.
 */
void slurm_debug(const char *fmt, ...) { (void)fmt; }
void slurm_error(const char *fmt, ...) { (void)fmt; }
void slurm_info(const char *fmt, ...) { (void)fmt; }
spank_context_t spank_context(void) { return S_CTX_ERROR; }
spank_err_t spank_get_item(spank_t s, spank_item_t i, ...)
{ (void)s; (void)i; return ESPANK_ERROR; }
spank_err_t spank_getenv(spank_t s, const char *v, char *b, int l)
{ (void)s; (void)v; (void)b; (void)l; return ESPANK_ERROR; }
spank_err_t spank_setenv(spank_t s, const char *v, const char *x, int o)
{ (void)s; (void)v; (void)x; (void)o; return ESPANK_ERROR; }
spank_err_t spank_job_control_setenv(spank_t s, const char *v, const char *x,
				     int o)
{ (void)s; (void)v; (void)x; (void)o; return ESPANK_ERROR; }
spank_err_t spank_unsetenv(spank_t s, const char *v)
{ (void)s; (void)v; return ESPANK_ERROR; }
spank_err_t spank_option_getopt(spank_t s, struct spank_option *o, char **a)
{ (void)s; (void)o; (void)a; return ESPANK_ERROR; }
spank_err_t spank_option_register(spank_t s, struct spank_option *o)
{ (void)s; (void)o; return ESPANK_ERROR; }
int spank_remote(spank_t s) { (void)s; return 0; }

static const char *plugin_path(void)
{
	const char *p = getenv("RB_PLUGIN");

	return p && *p ? p : "build/restore_budget.so";
}

static int open_plugin(void **state)
{
	/* RTLD_LAZY: slurm_error, spank_* and friends come from the host. */
	void *h = dlopen(plugin_path(), RTLD_LAZY | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", plugin_path(), dlerror());
		return -1;
	}
	*state = h;
	return 0;
}

static int close_plugin(void **state)
{
	if (*state)
		dlclose(*state);
	return 0;
}

static void test_slurm_loader_symbols_are_exported(void **state)
{
	static const char *const wanted[] = {
		"plugin_name", "plugin_type", "plugin_version",
		"spank_plugin_version", "slurm_spank_init",
		"slurm_spank_init_post_opt", "slurm_spank_job_prolog",
		"slurm_spank_user_init", "slurm_spank_task_init",
		"slurm_spank_job_epilog",
	};

	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (!dlsym(*state, wanted[i]))
			fail_msg("%s is not exported", wanted[i]);
	assert_string_equal((const char *)dlsym(*state, "plugin_name"),
			    "restore_budget");
	assert_string_equal((const char *)dlsym(*state, "plugin_type"), "spank");
}

static void test_core_symbols_are_not_exported(void **state)
{
	static const char *const hidden[] = {
		"rb_engine_start", "rb_config_load", "rb_ledger_open",
		"rb_record_parse", "rb_lifecycle_start", "rb_checkpoint_find",
		"rb_log", "rb_strlcpy", "rb_kv_escape",
	};

	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (dlsym(*state, hidden[i]))
			fail_msg("%s is exported", hidden[i]);
}

/* Every dynamic symbol the plugin defines, from nm: only the loader's. */
static void test_only_plugin_and_spank_symbols_are_defined(void **state)
{
	(void)state;
	char cmd[512], line[512];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only %s", plugin_path());
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *name = strrchr(line, ' ');

		assert_non_null(name);
		name++;
		name[strcspn(name, "\n")] = '\0';
		if (strncmp(name, "plugin_", 7) && strncmp(name, "slurm_spank_", 12) &&
		    strcmp(name, "spank_plugin_version"))
			fail_msg("unexpected export %s", name);
		n++;
	}
	assert_int_equal(pclose(p), 0);
	assert_true(n >= 10);
}

/* Undefined symbols must come from libc, libconfig or Slurm's SPANK API:
 * anything else would stop a `required` plugin from loading. */
static void test_undefined_symbols_are_known(void **state)
{
	(void)state;
	char cmd[512], line[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -D --undefined-only %s", plugin_path());
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *name = strrchr(line, ' ');

		name = name ? name + 1 : line;
		name[strcspn(name, "\n")] = '\0';
		if (strchr(name, '@') || strncmp(name, "config_", 7) == 0 ||
		    strncmp(name, "__", 2) == 0 || strncmp(name, "_ITM", 4) == 0 ||
		    strncmp(name, "spank_", 6) == 0 ||
		    strcmp(name, "slurm_error") == 0 ||
		    strcmp(name, "slurm_info") == 0 ||
		    strcmp(name, "slurm_debug") == 0 ||
		    strcmp(name, "slurm_verbose") == 0)
			continue;
		fail_msg("undefined symbol %s would have to come from the host", name);
	}
	assert_int_equal(pclose(p), 0);
}

/* GNU_STACK, as readelf -lW shows it, is RW: loading the plugin never
 * makes slurmd's or slurmstepd's stacks executable. */
static void test_stack_is_not_executable(void **state)
{
	(void)state;
	char cmd[512], line[512];
	int seen = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW %s", plugin_path());
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char flags[8] = "";

		if (sscanf(line, " GNU_STACK %*s %*s %*s %*s %*s %7s",
			   flags) != 1)
			continue;
		seen++;
		if (strcmp(flags, "RW") != 0)
			fail_msg("GNU_STACK is %s, not RW", flags);
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(seen, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slurm_loader_symbols_are_exported),
		cmocka_unit_test(test_core_symbols_are_not_exported),
		cmocka_unit_test(test_only_plugin_and_spank_symbols_are_defined),
		cmocka_unit_test(test_undefined_symbols_are_known),
		cmocka_unit_test(test_stack_is_not_executable),
	};
	return cmocka_run_group_tests_name("exports", tests, open_plugin,
					   close_plugin);
}
