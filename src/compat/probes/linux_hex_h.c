/*
 * 6.12 (Debian trixie has it; "kernel.h: split out hex helpers"): hex2bin()
 * and friends are declared in <linux/hex.h>, no longer via kernel.h.
 */
#include <linux/hex.h>
int probe(u8 *d, const char *s) { return hex2bin(d, s, 1); }
