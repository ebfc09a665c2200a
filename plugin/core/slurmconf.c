/*
 * slurmconf.c - PrologFlags from slurm.conf (slurmconf.h).
 */
#include "slurmconf.h"

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

/* One line: its PrologFlags value, if it sets it. */
static bool line_flags(const char *line, size_t len, unsigned *bits)
{
	static const char key[] = "prologflags";
	const size_t klen = sizeof(key) - 1;
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
	*bits = flag_bits(line + i, n);
	return true;
}

unsigned rb_slurmconf_parse_prolog_flags(const char *text)
{
	unsigned bits = 0;

	while (*text) {
		size_t len = strcspn(text, "\n");
		unsigned b;

		if (line_flags(text, len, &b))
			bits = b;
		text += len;
		if (*text)
			text++;
	}
	return bits;
}

int rb_slurmconf_prolog_flags(const char *path, rb_err *err)
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
	rc = (int)rb_slurmconf_parse_prolog_flags(text);
out:
	free(text);
	close(fd);
	return rc;
}
