/*
 * job_addr.c - "J" and "A_T" as Slurm writes them, and squeue's lines of an
 * array (job_addr.h).
 */
#include "job_addr.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Decimal digits s[0..n-1] (n >= 1) as a value up to max. 0 or -1. */
static int parse_dec(const char *s, size_t n, uint64_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int rb_job_arg_parse(const char *s, rb_job_arg *out)
{
	const char *us;
	size_t n;

	if (!s)
		return -1;
	memset(out, 0, sizeof(*out));
	us = strchr(s, '_');
	n = us ? (size_t)(us - s) : strlen(s);
	if (parse_dec(s, n, UINT32_MAX, &out->id) < 0 || out->id == 0)
		return -1;
	if (!us)
		return 0;
	out->task = true;
	return parse_dec(us + 1, strlen(us + 1), RB_TASK_ID_MAX,
			 &out->task_id);
}

/* The next '|'-terminated field of a line (line[0..len-1]) at *pos. */
static int field(const char *line, size_t len, size_t *pos, char *val,
		 size_t vlen)
{
	const char *p = line + *pos;
	const char *bar = memchr(p, '|', len - *pos);
	size_t n;

	if (!bar || (n = (size_t)(bar - p)) >= vlen)
		return -1;
	memcpy(val, p, n);
	val[n] = '\0';
	*pos += n + 1;
	return 0;
}

/* "[5-999%4]": what Slurm writes for a set of task ids. */
static bool task_set(const char *s)
{
	size_t n = strlen(s);

	return n >= 3 && s[0] == '[' && s[n - 1] == ']' &&
	       strspn(s + 1, "0123456789,-%") == n - 2;
}

/* One line: 1 (a line of the array, *t filled), 0 (another job's), -1. */
static int parse_line(const char *line, size_t len, const char *prefix,
		      rb_squeue_task *t)
{
	char val[RB_SQUEUE_ADDR_MAX], task[RB_SQUEUE_ADDR_MAX];
	size_t pos = 0, plen = strlen(prefix);
	const char *rest;

	memset(t, 0, sizeof(*t));
	if (field(line, len, &pos, val, sizeof(val)) < 0 ||
	    parse_dec(val, strlen(val), UINT32_MAX, &t->job_id) < 0 ||
	    field(line, len, &pos, t->addr, sizeof(t->addr)) < 0)
		return -1;
	if (strncmp(t->addr, prefix, plen) != 0)
		return 0;
	rest = t->addr + plen;
	if (field(line, len, &pos, task, sizeof(task)) < 0 ||
	    field(line, len, &pos, t->state, sizeof(t->state)) < 0 ||
	    !t->state[0] || strspn(t->state, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") !=
				    strlen(t->state))
		return -1;
	if (task_set(rest)) {
		t->not_started = true;
		return 1;
	}
	return parse_dec(rest, strlen(rest), RB_TASK_ID_MAX, &t->task_id) < 0 ?
		       -1 : 1;
}

int rb_squeue_array_parse(const char *text, uint32_t array_id,
			  rb_squeue_task *out, size_t max, size_t *n)
{
	char prefix[16];
	const char *p = text;
	rb_squeue_task t;

	*n = 0;
	snprintf(prefix, sizeof(prefix), "%" PRIu32 "_", array_id);
	while (*p) {
		size_t len = strcspn(p, "\n");
		int r = len ? parse_line(p, len, prefix, &t) : 0;

		if (r < 0)
			return -1;
		if (r == 1) {
			if (*n < max)
				out[*n] = t;
			(*n)++;
		}
		p += len + (p[len] == '\n');
	}
	return 0;
}

/* The value "%c" stands for in a --checkpoint-dir, or NULL for none. */
static const char *dir_pattern_value(char c, uint32_t job_id,
				     uint32_t array_job_id,
				     uint32_t array_task_id, char *num)
{
	switch (c) {
	case 'A':
		snprintf(num, 16, "%" PRIu32, array_job_id ? array_job_id : job_id);
		return num;
	case 'a':
		snprintf(num, 16, "%" PRIu32, array_job_id ? array_task_id : 0);
		return num;
	case 'j':
		snprintf(num, 16, "%" PRIu32, job_id);
		return num;
	case '%':
		return "%";
	default:
		return NULL;
	}
}

int rb_checkpoint_dir_expand(const char *dir, uint32_t job_id,
			     uint32_t array_job_id, uint32_t array_task_id,
			     char *out, size_t len)
{
	size_t used = 0;
	char num[16];

	for (const char *p = dir; *p; p++) {
		const char one[2] = { *p, '\0' };
		const char *v = NULL;
		size_t n;

		if (p[0] == '%' && p[1])
			v = dir_pattern_value(p[1], job_id, array_job_id,
					      array_task_id, num);
		if (v)
			p++; /* the pattern's letter */
		else
			v = one;
		n = strlen(v);
		if (used + n >= len)
			goto fail;
		memcpy(out + used, v, n);
		used += n;
	}
	out[used] = '\0';
	return 0;
fail:
	if (strlen(dir) < len)
		memcpy(out, dir, strlen(dir) + 1);
	else if (len > 0)
		out[0] = '\0';
	return -1;
}
