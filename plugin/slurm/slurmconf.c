/*
 * slurmconf.c - PrologFlags, RequeueExit and ClusterName from slurm.conf
 * (slurmconf.h).
 */
#include "slurmconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define RB_SLURMCONF_MAX (4 << 20)

static unsigned flag_bits(const char *list, size_t len)
{
	static const struct {
		const char *name;
		unsigned bits;
	} names[] = {
		/* Contain implies Alloc, RunInJob implies Contain (slurm.conf(5)) */
		{ "alloc", RB_PF_ALLOC },
		{ "contain", RB_PF_ALLOC | RB_PF_CONTAIN },
		{ "runinjob", RB_PF_ALLOC | RB_PF_CONTAIN | RB_PF_RUN_IN_JOB },
	};
	unsigned bits = 0;

	while (len > 0) {
		size_t n = 0;

		while (n < len && list[n] != ',')
			n++;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n &&
			    strncasecmp(list, names[i].name, n) == 0)
				bits |= names[i].bits;
		list += n;
		len -= n;
		if (len > 0) {
			list++;
			len--;
		}
	}
	return bits;
}

/* One line: the value it gives key (lower case), if it sets it. */
static bool line_value(const char *line, size_t len, const char *key,
		       const char **val, size_t *vlen)
{
	const size_t klen = strlen(key);
	size_t i = 0, n;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i + klen >= len || strncasecmp(line + i, key, klen) != 0)
		return false;
	i += klen;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i >= len || line[i] != '=')
		return false;
	i++;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	n = 0;
	while (i + n < len && line[i + n] != ' ' && line[i + n] != '\t' &&
	       line[i + n] != '#')
		n++;
	*val = line + i;
	*vlen = n;
	return true;
}

/* The value of the last line setting key (the last wins, as in Slurm). */
static bool last_value(const char *text, const char *key, const char **val,
		       size_t *vlen)
{
	bool found = false;

	while (*text) {
		size_t len = strcspn(text, "\n");

		if (line_value(text, len, key, val, vlen))
			found = true;
		text += len;
		if (*text)
			text++;
	}
	return found;
}

unsigned rb_slurmconf_parse_prolog_flags(const char *text)
{
	const char *val;
	size_t n;

	return last_value(text, "prologflags", &val, &n) ? flag_bits(val, n) : 0;
}

/* One "N" or "N-M" of a RequeueExit list into out; false if not one. */
static bool add_codes(const char *tok, size_t n, rb_requeue_exit *out)
{
	char buf[16], *end;
	long lo, hi;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, tok, n);
	buf[n] = '\0';
	lo = strtol(buf, &end, 10);
	hi = lo;
	if (*end == '-') {
		if (end[1] < '0' || end[1] > '9')
			return false;
		hi = strtol(end + 1, &end, 10);
	}
	if (*end || buf[0] < '0' || buf[0] > '9' || lo < 0 || hi < lo ||
	    hi > RB_REQUEUE_CODE_MAX)
		return false;
	for (long c = lo; c <= hi; c++) {
		/* 0 is no requeue code to exit with (config.h) */
		if (out->first < 0 && c > 0)
			out->first = (int)c;
		out->codes[c / 8] |= (uint8_t)(1u << (c % 8));
	}
	return true;
}

void rb_slurmconf_parse_requeue_exit(const char *text, rb_requeue_exit *out)
{
	const char *val;
	size_t n;

	memset(out, 0, sizeof(*out));
	out->first = -1;
	if (!last_value(text, "requeueexit", &val, &n))
		return;
	out->set = true;
	/* the list as written, for messages (cut if very long) */
	memcpy(out->text, val, n < sizeof(out->text) ? n : sizeof(out->text) - 1);
	while (n > 0) {
		size_t k = 0;

		while (k < n && val[k] != ',')
			k++;
		add_codes(val, k, out);
		val += k;
		n -= k;
		if (n > 0) {
			val++;
			n--;
		}
	}
}

int rb_slurmconf_parse_cluster_name(const char *text, char *out, size_t len)
{
	const char *val;
	size_t n;

	if (!last_value(text, "clustername", &val, &n) || n == 0 || n >= len)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)val[i]);
	out[n] = '\0';
	return 0;
}

bool rb_requeue_exit_has(const rb_requeue_exit *r, int code)
{
	return code >= 0 && code <= RB_REQUEUE_CODE_MAX &&
	       (r->codes[code / 8] & (1u << (code % 8)));
}

/* The whole of slurm.conf at path into *out (free it): 0, or -1 with err. */
static int read_conf(const char *path, char **out, rb_err *err)
{
	struct stat st;
	char *text = NULL;
	ssize_t n;
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return rb_err_set(err, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > RB_SLURMCONF_MAX) {
		rb_err_setf(err, "%s: not a regular file of at most %d bytes",
			    path, RB_SLURMCONF_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		rb_err_setf(err, "%s: out of memory", path);
		goto out;
	}
	n = read(fd, text, (size_t)st.st_size);
	if (n < 0) {
		rb_err_setf(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	text[n] = '\0';
	*out = text;
	text = NULL;
	rc = 0;
out:
	free(text);
	close(fd);
	return rc;
}

int rb_slurmconf_prolog_flags(const char *path, rb_err *err)
{
	char *text = NULL;
	int rc;

	if (read_conf(path, &text, err) < 0)
		return -1;
	rc = (int)rb_slurmconf_parse_prolog_flags(text);
	free(text);
	return rc;
}

int rb_slurmconf_requeue_exit(const char *path, rb_requeue_exit *out,
			      rb_err *err)
{
	char *text = NULL;

	memset(out, 0, sizeof(*out));
	out->first = -1;
	if (read_conf(path, &text, err) < 0)
		return -1;
	rb_slurmconf_parse_requeue_exit(text, out);
	free(text);
	return 0;
}

int rb_slurmconf_cluster_name(const char *path, char *out, size_t len,
			      rb_err *err)
{
	char *text = NULL;
	int rc;

	if (read_conf(path, &text, err) < 0)
		return -1;
	rc = rb_slurmconf_parse_cluster_name(text, out, len) < 0 ? 1 : 0;
	free(text);
	return rc;
}
