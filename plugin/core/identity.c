/*
 * identity.c - a submission's identity (see identity.h).
 */
#include "identity.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "diag.h"
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
	else if (sluid && sluid[0] &&
		 (size_t)snprintf(buf, len, "sluid:%s", sluid) < len &&
		 rb_submission_ok(buf))
		return buf;
	else
		buf[0] = '\0';
	return buf[0] ? buf : NULL;
}
