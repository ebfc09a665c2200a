/*
 * identity.c - a submission's identity (see identity.h).
 */
#include "identity.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/base.h"
#include "record.h"

int rb_submission_new(char *buf, size_t len)
{
	unsigned char raw[16];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, GRND_NONBLOCK);

		if (n <= 0)
			return -1; /* no entropy yet: no identity, never a weak one */
		got += (size_t)n;
	}
	if (len < sizeof("rb1:") + 2 * sizeof(raw))
		return -1;
	snprintf(buf, len, "rb1:");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(buf + 4 + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

const char *rb_submission_of(const char *nonce, const char *sluid, char *buf,
			     size_t len)
{
	buf[0] = '\0';
	if (rb_submission_ok(nonce) && strlen(nonce) < len)
		rb_strlcpy(buf, nonce, len);
	else if (!sluid || !sluid[0] ||
		 (size_t)snprintf(buf, len, "sluid:%s", sluid) >= len ||
		 !rb_submission_ok(buf))
		buf[0] = '\0';
	return buf[0] ? buf : NULL;
}

/* Two identities of one kind ("rb1:" from sbatch, "sluid:" from Slurm
 * 26.05+): only those are compared, since one job may show the prolog one
 * kind and its batch step another. */
static bool same_kind(const char *a, const char *b)
{
	size_t n;

	if (!rb_submission_ok(a) || !rb_submission_ok(b))
		return false;
	n = strcspn(a, ":");
	return a[n] == ':' && strncmp(a, b, n + 1) == 0;
}

bool rb_record_names_another_job(const rb_record *rec, uint32_t uid,
				 const char *submission, int64_t attempt,
				 const char **why)
{
	const rb_attempt *cur = &rec->budget.cur;

	*why = NULL;
	if (rec->uid != uid)
		*why = "uid";
	else if (same_kind(rec->submission, submission) &&
		 strcmp(rec->submission, submission) != 0)
		*why = "submission";
	/* The attempt order holds whatever the identities say: the user
	 * chooses their job's identity and can send an old one again
	 * (docs/security.md, "Job identity"). */
	else if (cur->attempt >= 0 && attempt < cur->attempt)
		*why = "attempt_below";
	else if (cur->attempt >= 0 && attempt == cur->attempt &&
		 cur->end != RB_END_NONE)
		*why = "attempt_ended";
	return *why != NULL;
}
