// SPDX-License-Identifier: GPL-2.0
/*
 * mmapcmp FILE REF: exit 0 if FILE, read through a shared read-only mmap
 * (page faults, and the readahead they start), holds the bytes of REF,
 * read with read(2); 1 if not (the first differing offset on stderr);
 * 2 on an error.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct stat a, b;
	char *m, *buf;
	size_t off;
	int fa, fb;

	if (argc != 3) {
		fprintf(stderr, "usage: mmapcmp FILE REF\n");
		return 2;
	}
	fa = open(argv[1], O_RDONLY);
	fb = open(argv[2], O_RDONLY);
	if (fa < 0 || fb < 0 || fstat(fa, &a) || fstat(fb, &b)) {
		perror("mmapcmp: open");
		return 2;
	}
	if (a.st_size != b.st_size) {
		fprintf(stderr, "mmapcmp: sizes %lld and %lld\n",
			(long long)a.st_size, (long long)b.st_size);
		return 1;
	}
	if (!a.st_size)
		return 0;
	m = mmap(NULL, a.st_size, PROT_READ, MAP_SHARED, fa, 0);
	buf = malloc(b.st_size);
	if (m == MAP_FAILED || !buf) {
		perror("mmapcmp: mmap");
		return 2;
	}
	for (off = 0; off < (size_t)b.st_size;) {
		ssize_t n = read(fb, buf + off, b.st_size - off);

		if (n <= 0) {
			perror("mmapcmp: read");
			return 2;
		}
		off += n;
	}
	for (off = 0; off < (size_t)a.st_size; off++)
		if (m[off] != buf[off]) {
			fprintf(stderr, "mmapcmp: differ at byte %zu\n", off);
			return 1;
		}
	return 0;
}
