/*
 * fuzz_kv.c - libFuzzer target for the value escaping of record and event
 * lines (rb_kv_escape / rb_kv_unescape, record.c).
 *
 * Input: byte 0 picks the output buffer size (small sizes probe the bounds;
 * the buffer is malloc'ed with exactly that size so ASan sees one byte too
 * far), the rest is the text.
 *
 * Properties:
 *   - unescape never writes past outlen, always NUL-terminates, and on
 *     failure leaves "" behind;
 *   - what unescape accepts is canonical: escaping the result gives back
 *     the input byte for byte (strict inverse, record.c);
 *   - escape(s) is one printable token (no space, '=', control or 8-bit
 *     byte) and unescape(escape(s)) == s, for any C string s.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "record.h"

static void check_escape_roundtrip(const char *s, size_t slen, size_t outlen)
{
	char *esc = malloc(3 * slen + 1);
	char *small = malloc(outlen);
	char *back = malloc(slen + 1);
	ssize_t n, m, k;
	ssize_t i;

	n = rb_kv_escape(s, esc, 3 * slen + 1);
	FUZZ_CHECK(n >= 0, "escape into 3n+1 bytes failed");
	FUZZ_CHECK((size_t)n == strlen(esc), "escape length");
	for (i = 0; i < n; i++)
		FUZZ_CHECK(esc[i] > 0x20 && esc[i] < 0x7f && esc[i] != '=',
			   "escape left byte 0x%02x", (unsigned char)esc[i]);
	m = rb_kv_unescape(esc, (size_t)n, back, slen + 1);
	FUZZ_CHECK(m == (ssize_t)slen && memcmp(back, s, slen) == 0,
		   "unescape(escape(s)) != s");
	/* The same into a buffer that may be too small. */
	k = rb_kv_escape(s, small, outlen);
	if (k < 0)
		FUZZ_CHECK(small[0] == '\0' && (size_t)n + 1 > outlen,
			   "escape refused although it fits");
	else
		FUZZ_CHECK(k == n && memcmp(small, esc, (size_t)n + 1) == 0,
			   "escape into a small buffer differs");
	free(back);
	free(small);
	free(esc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in;
	char *out, *re, *cstr;
	size_t inlen, outlen;
	ssize_t n, m;

	fuzz_quiet();
	if (size < 1)
		return 0;
	in = (const char *)data + 1;
	inlen = size - 1;
	outlen = data[0] < 128 ? (size_t)data[0] % 64 + 1 : inlen + 1;

	out = malloc(outlen);
	memset(out, 'X', outlen);
	n = rb_kv_unescape(in, inlen, out, outlen);
	if (n < 0) {
		FUZZ_CHECK(out[0] == '\0', "failed unescape left text behind");
	} else {
		FUZZ_CHECK((size_t)n < outlen, "unescape length %zd >= %zu", n,
			   outlen);
		FUZZ_CHECK(strlen(out) == (size_t)n, "unescape: NUL inside");
		FUZZ_CHECK((size_t)n <= inlen, "unescape grew the text");
		re = malloc(inlen + 1);
		m = rb_kv_escape(out, re, inlen + 1);
		FUZZ_CHECK(m == (ssize_t)inlen && memcmp(re, in, inlen) == 0,
			   "accepted text is not canonical: '%.*s' -> '%s'",
			   (int)inlen, in, m >= 0 ? re : "(refused)");
		free(re);
	}
	free(out);

	/* escape -> unescape for the input as a C string */
	cstr = malloc(inlen + 1);
	memcpy(cstr, in, inlen);
	cstr[inlen] = '\0';
	check_escape_roundtrip(cstr, strlen(cstr), outlen);
	free(cstr);

	(void)rb_checksum(in, inlen);
	return 0;
}
