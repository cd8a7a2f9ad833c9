// SPDX-License-Identifier: MIT
/*
 * record.c - a record of the 1.3 record layer (pohmel_proto.h): outer
 * header (len, flags = POHMEL_HF_SEALED, nothing else), the inner
 * message encrypted (or in clear with POHMEL_FEAT_SIGN), the tag. The
 * outer header is always authenticated; with SIGN the inner message is
 * too, as associated data with an empty plaintext. Lengths are checked
 * by the caller (proto_record, or the sender's own buffer sizes).
 */
#include "pohmeld.h"

static void rec_hdr(uint8_t *out, uint32_t n)
{
	struct whdr h = {
		.len = n + POHMEL_TAG_LEN,	/* the bytes after it */
		.flags = POHMEL_HF_SEALED,
	};

	whdr_put(out, &h);
}

/* inner (n bytes) -> out (n + REC_OVERHEAD bytes, not overlapping). */
int rec_seal(struct aead *a, uint64_t ctr, bool sign, const uint8_t *inner,
	     uint32_t n, uint8_t *out)
{
	uint8_t *body = out + POHMEL_HDR_SIZE;

	rec_hdr(out, n);
	if (sign) {
		memcpy(body, inner, n);
		return aead_run(a, ctr, out, POHMEL_HDR_SIZE, body, n, NULL,
				NULL, 0, body + n);
	}
	return aead_run(a, ctr, out, POHMEL_HDR_SIZE, NULL, 0, inner, body, n,
			body + n);
}

/* rec: a whole record whose inner message is n bytes; on success the
 * inner message, in clear, is at rec + POHMEL_HDR_SIZE. */
int rec_open(struct aead *a, uint64_t ctr, bool sign, uint8_t *rec,
	     uint32_t n)
{
	uint8_t *body = rec + POHMEL_HDR_SIZE;

	if (sign)
		return aead_run(a, ctr, rec, POHMEL_HDR_SIZE, body, n, NULL,
				NULL, 0, body + n);
	return aead_run(a, ctr, rec, POHMEL_HDR_SIZE, NULL, 0, body, body, n,
			body + n);
}
