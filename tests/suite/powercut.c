/*
 * powercut: workload and checker of the power-cut crash test
 * (tests/qemu/powercut, issue 19 item 5). Runs in the client guest against
 * a pohmel mount of the server VM, whose control port resets that machine
 * without sync ('b' -> sysrq b).
 *
 *   powercut -m MNT -s SERVER_IP -n CYCLES -S SEED [-k] [-j JOURNAL] [-c kill]
 *
 * -c kill: the "crash" kills pohmeld only and restarts it (the machine's
 * page cache survives). That is the checker's control: everything the
 * server applied survives, so a finding there is a replay bug or a bug of
 * this checker, never a durability gap.
 *
 * Each cycle works in a new directory MNT/cNNN (made stable first: mkdir,
 * fsync of MNT, sync), with one thread issuing random operations:
 *   write     pwrite at a random offset/size; every byte is a function of
 *             (seed, cycle, write generation, offset), so a byte found
 *             later names the write it came from
 *   fsync, fdatasync (file)   acknowledge every write of that file done
 *             before the call, when the call returns 0
 *   create (O_EXCL), rename (to a new or an existing name), link, unlink,
 *   mkdir, rmdir   namespace changes, each checked against the expected
 *             result (so one applied twice by a replay shows: EEXIST,
 *             ENOENT)
 *   fsync(dir)     acknowledges every namespace change before it
 *   sync()         acknowledges everything, if it returned before the crash
 *             was sent (sync(2) cannot report what a crash it spanned lost)
 * The server VM is reset either right after an acknowledgement returned
 * ("ack" mode) or by a second thread after a random delay while the
 * workload runs ("async" mode: an operation may be in flight and is
 * replayed after the reboot). The workload then stops; when the server
 * is back (a new boot id on its control port) the in-flight operation
 * completes; in half of the cycles every open file is then fsynced again
 * (the protocol's contract: the client keeps unstable writes and sends
 * them again under the new write verifier, so that fsync acknowledges the
 * writes made before the crash too). Then every descriptor is closed, the
 * mount is remounted (nothing read comes from the client's caches) and the
 * directory is checked:
 *   names     for each name, its history of states (absent, file F, dir)
 *             from the last acknowledged one on: the name must be in one of
 *             them (an acknowledged name is there, a name removed or
 *             renamed away by an acknowledged change is gone); a name the
 *             workload never made is a failure
 *   bytes     for each byte of a file: the last acknowledged write covering
 *             it (or zero if none), or a later unacknowledged write
 *             covering it; nothing else (a byte of an older write, or of
 *             no write, is corruption)
 *   size      at least the end of the acknowledged writes, at most the end
 *             of all writes
 *   replies   an operation in flight at the crash that fails although what
 *             it depended on was acknowledged (create -> EEXIST, unlink ->
 *             ENOENT, ...) was applied twice or lost.
 * What is not acknowledged may be lost. Namespace changes made before the
 * crash are only acknowledged by fsync(dir) or sync() before the crash:
 * the protocol does not resend them (pohmel_proto.h, "Durability").
 * Output: one line per finding, naming cycle, seed, mode, file, offset,
 * expected and found. The journal (-j, on the client's local disk) gets one
 * line per operation and acknowledgement. Exit 0 if no cycle found
 * anything, 1 otherwise, 2 on a setup problem.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CTL_PORT 7351
#define NNAMES 12		/* file names n00..n11 */
#define NDIRS 4			/* directory names d0..d3 */
#define MAXFID 64		/* files created per cycle */
#define MAXWR 400		/* writes per cycle */
#define MAXOPS 160		/* operations per cycle */
#define FILE_SPAN (192 * 1024)	/* writes land below this offset */
#define MAXLEN (24 * 1024)

static const char *mnt, *srv, *jpath = "/var/tmp/powercut.journal";
static unsigned long long seed0;
static int cycles = 10, keep_going;
static FILE *jf;

/* --- small helpers ----------------------------------------------------- */

static unsigned long long rng;
static unsigned long long rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned long rnd_below(unsigned long n)
{
	return n ? rnd() % n : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void jlog(const char *fmt, ...)
{
	va_list ap;

	if (!jf)
		return;
	va_start(ap, fmt);
	vfprintf(jf, fmt, ap);
	va_end(ap);
	fputc('\n', jf);
	fflush(jf);
}

/* --- the model ----------------------------------------------------------- */

/* One write: its bytes are pattern(cycle, gen, offset). */
struct wr {
	int fid;
	long off, len;
	int acked;
};

/* A file made by this cycle's workload (an inode, under 0..n names). */
struct fobj {
	int fd;			/* -1 once closed (unlinked) */
};

/* A name's states, from the cycle's start (absent) on. */
enum { ABSENT, FILE_, DIR_ };
struct nstate {
	int kind, fid;
	int acked;
};
#define MAXHIST (MAXOPS + 2)
struct name {
	char s[8];
	int n;
	struct nstate h[MAXHIST];
};

static int cycle, dirfd_ = -1;
static char cdir[1024];
static const char *mode;
static struct wr wrs[MAXWR];
static int nwr;
static struct fobj fobjs[MAXFID];
static int nfid;
static struct name names[NNAMES + NDIRS];
static int failures, notes;

/* Findings by kind, for the summary line. */
static const char *const kinds[] = { "name", "data", "size", "reply", "dir", "stray" };
enum { K_NAME, K_DATA, K_SIZE, K_REPLY, K_DIR, K_STRAY, K_N };
static int by_kind[K_N];

static void finding(int kind, const char *fmt, ...)
{
	va_list ap;

	by_kind[kind]++;
	printf("powercut: FAIL [%s] cycle %d seed %llu mode %s: ", kinds[kind], cycle, seed0, mode);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	failures++;
}

static void note(const char *fmt, ...)
{
	va_list ap;

	printf("powercut: note cycle %d seed %llu mode %s: ", cycle, seed0, mode);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	notes++;
}

static unsigned char pattern(int gen, long off)
{
	unsigned long long x = seed0 * 0x9e3779b97f4a7c15ULL ^
			       ((unsigned long long)cycle << 48) ^
			       ((unsigned long long)gen << 32) ^ (off >> 3);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 32;
	return (unsigned char)(x >> ((off & 7) * 8));
}

static struct nstate *cur(struct name *n)
{
	return &n->h[n->n - 1];
}

static int push(struct name *n, int kind, int fid)
{
	if (n->n == MAXHIST)
		return -1;
	n->h[n->n++] = (struct nstate){ kind, fid, 0 };
	return 0;
}

/* fsync(dir) or sync() returned: every name's present state is stable. */
static void ack_names(void)
{
	for (int i = 0; i < NNAMES + NDIRS; i++)
		cur(&names[i])->acked = 1;
}

/* Were all namespace changes so far acknowledged? */
static int names_stable(void)
{
	for (int i = 0; i < NNAMES + NDIRS; i++)
		if (!cur(&names[i])->acked)
			return 0;
	return 1;
}

/* --- the server's control port -------------------------------------------- */

static int ctl_fd = -1;
static char boot_id[64];

/* Connect and read "pcvm BOOT_ID"; 0 on success. */
static int ctl_connect(char *id, size_t idlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(CTL_PORT) };
	struct timeval tv = { 0, 700000 };
	char line[128];
	int one = 1, s, n = 0;

	inet_pton(AF_INET, srv, &a.sin_addr);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	while (n < (int)sizeof(line) - 1 && read(s, line + n, 1) == 1 && line[n] != '\n')
		n++;
	line[n] = 0;
	if (strncmp(line, "pcvm ", 5)) {
		close(s);
		return -1;
	}
	if (snprintf(id, idlen, "%s", line + 5) >= (int)idlen) {
		close(s);
		return -1;
	}
	if (ctl_fd >= 0)
		close(ctl_fd);
	ctl_fd = s;
	return 0;
}

/* 'b': reset the server machine; 'k': kill pohmeld only (-c kill). */
static char crash_cmd = 'b';
static void crash(void)
{
	if (write(ctl_fd, &crash_cmd, 1) != 1)
		fprintf(stderr, "powercut: sending the crash: %s\n", strerror(errno));
	/* The control server serves one connection at a time. */
	close(ctl_fd);
	ctl_fd = -1;
}

/* Wait for a boot id other than the one before the crash. */
static int wait_reboot(const char *old, double *took)
{
	double t0 = now();
	char id[64];

	while (now() - t0 < 300) {
		if (ctl_connect(id, sizeof(id)) == 0 && strcmp(id, old)) {
			snprintf(boot_id, sizeof(boot_id), "%s", id);
			*took = now() - t0;
			return 0;
		}
		usleep(200000);
	}
	return -1;
}

/* async mode: crash after a delay while the workload runs. */
static volatile int crashed;
static long crash_delay_us;
static void *crasher(void *arg)
{
	(void)arg;
	usleep(crash_delay_us);
	crash();
	__atomic_store_n(&crashed, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* --- the workload ------------------------------------------------------------ */

static char *path_of(const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", cdir, name) >= (int)len)
		buf[0] = 0;
	return buf;
}

static struct name *pick(int dirs, int kind)
{
	int base = dirs ? NNAMES : 0, cnt = dirs ? NDIRS : NNAMES;
	int start = rnd_below(cnt);

	for (int i = 0; i < cnt; i++) {
		struct name *n = &names[base + (start + i) % cnt];

		if (cur(n)->kind == kind)
			return n;
	}
	return NULL;
}

/*
 * One operation: returns 1 if it was an acknowledgement ("ack" mode may
 * crash right after it). An unexpected result is a finding if it cannot
 * be explained by the crash: `after` says the crash had already been sent
 * when the call started or while it ran.
 */
static unsigned char wbuf[MAXLEN];
static int one_op(int *after)
{
	char p1[4200], p2[4200];
	struct name *a, *b;
	int r = rnd_below(100), rc, fid, pre = names_stable();
	const char *what = NULL;
	char desc[200];

#define CRASHED() (*after = *after || __atomic_load_n(&crashed, __ATOMIC_SEQ_CST))
	/* Unexpected results: a finding if what the call depended on was stable. */
#define CHECK(cond, ...) do { \
		int e_ = errno; \
		CRASHED(); \
		if (!(cond)) { \
			snprintf(desc, sizeof(desc), __VA_ARGS__); \
			errno = e_; \
			if (!*after) \
				finding(K_REPLY, "%s: %s (before the crash)", desc, strerror(errno)); \
			else if (pre) \
				finding(K_REPLY, "%s: %s after the crash, although every earlier namespace change was acknowledged (applied twice or lost)", desc, strerror(errno)); \
			else \
				note("%s: %s after the crash (an unacknowledged change it depended on may be lost)", desc, strerror(errno)); \
		} \
	} while (0)

	if (r < 40 && nwr < MAXWR && (a = pick(0, FILE_))) {	/* write */
		long len = 1 + rnd_below(rnd_below(4) ? 4096 : MAXLEN);
		long off = rnd_below(FILE_SPAN - len);
		int gen = nwr;

		fid = cur(a)->fid;
		for (long i = 0; i < len; i++)
			wbuf[i] = pattern(gen, off + i);
		wrs[nwr] = (struct wr){ fid, off, len, 0 };
		rc = pwrite(fobjs[fid].fd, wbuf, len, off) == len;
		CHECK(rc, "pwrite %s (file %d) gen %d [%ld, +%ld)", a->s, fid, gen, off, len);
		if (rc)
			nwr++;
		jlog("w %s fid %d gen %d off %ld len %ld rc %d", a->s, fid, gen, off, len, rc);
		return 0;
	}
	if (r < 55 && (a = pick(0, FILE_))) {	/* fsync / fdatasync */
		int data = rnd_below(2);
		int upto = nwr;

		fid = cur(a)->fid;
		rc = (data ? fdatasync(fobjs[fid].fd) : fsync(fobjs[fid].fd)) == 0;
		CHECK(rc, "%s %s (file %d)", data ? "fdatasync" : "fsync", a->s, fid);
		if (rc)
			for (int i = 0; i < upto; i++)
				if (wrs[i].fid == fid)
					wrs[i].acked = 1;
		jlog("%s %s fid %d rc %d", data ? "fdatasync" : "fsync", a->s, fid, rc);
		return rc;
	}
	if (r < 65 && nfid < MAXFID && (a = pick(0, ABSENT))) {	/* create */
		int fd = open(path_of(a->s, p1, sizeof(p1)), O_CREAT | O_EXCL | O_RDWR, 0644);

		CHECK(fd >= 0, "create %s (O_EXCL)", a->s);
		jlog("create %s fid %d rc %d", a->s, nfid, fd >= 0);
		if (fd < 0 || push(a, FILE_, nfid))
			return 0;
		fobjs[nfid++].fd = fd;
		return 0;
	}
	if (r < 72 && (a = pick(0, FILE_))) {	/* rename to a new or existing name */
		b = &names[rnd_below(NNAMES)];
		/* (a rename between two links of one file does nothing) */
		if (b == a || cur(b)->kind == DIR_ ||
		    (cur(b)->kind == FILE_ && cur(b)->fid == cur(a)->fid))
			return 0;
		rc = rename(path_of(a->s, p1, sizeof(p1)), path_of(b->s, p2, sizeof(p2))) == 0;
		CHECK(rc, "rename %s -> %s", a->s, b->s);
		jlog("rename %s fid %d -> %s (was kind %d fid %d) rc %d", a->s, cur(a)->fid,
		     b->s, cur(b)->kind, cur(b)->fid, rc);
		if (rc && push(b, FILE_, cur(a)->fid) == 0)
			push(a, ABSENT, -1);
		return 0;
	}
	if (r < 76 && (a = pick(0, FILE_)) && (b = pick(0, ABSENT))) {	/* link */
		rc = link(path_of(a->s, p1, sizeof(p1)), path_of(b->s, p2, sizeof(p2))) == 0;
		CHECK(rc, "link %s -> %s", a->s, b->s);
		jlog("link %s fid %d -> %s rc %d", a->s, cur(a)->fid, b->s, rc);
		if (rc)
			push(b, FILE_, cur(a)->fid);
		return 0;
	}
	if (r < 80 && (a = pick(0, FILE_))) {	/* unlink */
		rc = unlink(path_of(a->s, p1, sizeof(p1))) == 0;
		CHECK(rc, "unlink %s", a->s);
		jlog("unlink %s fid %d rc %d", a->s, cur(a)->fid, rc);
		if (rc)
			push(a, ABSENT, -1);
		return 0;
	}
	if (r < 84) {	/* mkdir or rmdir */
		int mk = rnd_below(2);

		a = pick(1, mk ? ABSENT : DIR_);
		if (!a)
			return 0;
		path_of(a->s, p1, sizeof(p1));
		rc = (mk ? mkdir(p1, 0755) : rmdir(p1)) == 0;
		CHECK(rc, "%s %s", mk ? "mkdir" : "rmdir", a->s);
		jlog("%s %s rc %d", mk ? "mkdir" : "rmdir", a->s, rc);
		if (rc)
			push(a, mk ? DIR_ : ABSENT, -1);
		return 0;
	}
	if (r < 95) {	/* fsync(dir) */
		what = "fsync(dir)";
		rc = fsync(dirfd_) == 0;
		CHECK(rc, "fsync of the cycle directory");
		if (rc)
			ack_names();
	} else {	/* sync() */
		int upto = nwr;

		what = "sync";
		sync();
		rc = 1;
		/*
		 * sync(2) cannot report an error: one that returns after the
		 * crash was sent may have spanned it (the server lost what it
		 * had not made stable, and the FSYNC_FS ran on the new boot),
		 * so it acknowledges nothing. One that returned before the
		 * crash was sent ran on the old boot.
		 */
		if (__atomic_load_n(&crashed, __ATOMIC_SEQ_CST)) {
			note("sync returned after the crash was sent: not an acknowledgement");
			rc = 0;
		} else {
			ack_names();
			for (int i = 0; i < upto; i++)
				wrs[i].acked = 1;
		}
	}
	jlog("%s rc %d", what, rc);
	return rc;
#undef CHECK
#undef CRASHED
}

static const char *kind_name(int kind, int fid, char *buf, size_t len)
{
	if (kind == FILE_ && fid >= 0) {
		snprintf(buf, len, "file %d", fid);
		return buf;
	}
	return kind == ABSENT ? "absent" : kind == DIR_ ? "a directory" :
	       kind == FILE_ ? "a file" : "something else";
}

/* "absent* -> file 3 -> absent*": the states of n from index `from`, the
 * acknowledged ones starred. */
static const char *history(const struct name *n, int from)
{
	static char out[2048];
	char one[32];
	size_t l = 0;

	out[0] = 0;
	for (int k = from; k < n->n && l + 40 < sizeof(out); k++)
		l += snprintf(out + l, sizeof(out) - l, "%s%s%s", k > from ? " -> " : "",
			      kind_name(n->h[k].kind, n->h[k].fid, one, sizeof(one)),
			      n->h[k].acked ? "*" : "");
	return out;
}

/* --- the check ------------------------------------------------------------------- */

static unsigned char rbuf[FILE_SPAN + MAXLEN];
static int ackidx[FILE_SPAN + MAXLEN];

/* Does the file at path hold a valid state of fid? Returns 0, or 1 with
 * a description of the first bad byte in why (for the finding). */
static int check_file(const char *path, int fid, char *why, size_t wlen)
{
	long acked_end = 0, all_end = 0, size;
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(why, wlen, "open/stat: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	size = st.st_size;
	for (long i = 0; i < (long)(sizeof(ackidx) / sizeof(ackidx[0])); i++)
		ackidx[i] = -1;
	for (int i = 0; i < nwr; i++) {
		if (wrs[i].fid != fid)
			continue;
		if (wrs[i].off + wrs[i].len > all_end)
			all_end = wrs[i].off + wrs[i].len;
		if (!wrs[i].acked)
			continue;
		if (wrs[i].off + wrs[i].len > acked_end)
			acked_end = wrs[i].off + wrs[i].len;
		for (long o = wrs[i].off; o < wrs[i].off + wrs[i].len; o++)
			ackidx[o] = i;
	}
	if (size < acked_end || size > all_end) {
		snprintf(why, wlen, "size %ld, expected %ld (end of the acknowledged writes) to %ld (end of all writes)",
			 size, acked_end, all_end);
		close(fd);
		return 1;
	}
	if (pread(fd, rbuf, size, 0) != size) {
		snprintf(why, wlen, "read %ld bytes: %s", size, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	for (long o = 0; o < size; o++) {
		int a = ackidx[o], ok = 0;
		unsigned char want = a >= 0 ? pattern(a, o) : 0;

		if (rbuf[o] == want)
			continue;
		for (int j = a + 1; j < nwr && !ok; j++)
			ok = wrs[j].fid == fid && wrs[j].off <= o &&
			     o < wrs[j].off + wrs[j].len && rbuf[o] == pattern(j, o);
		if (ok)
			continue;
		/* Name the write the byte came from, if any. */
		int from = -1;

		for (int j = 0; j < nwr && from < 0; j++)
			if (wrs[j].fid == fid && wrs[j].off <= o &&
			    o < wrs[j].off + wrs[j].len && rbuf[o] == pattern(j, o))
				from = j;
		long run = 1;

		while (o + run < size && ackidx[o + run] == a &&
		       rbuf[o + run] != (a >= 0 ? pattern(a, o + run) : 0))
			run++;
		if (a >= 0)
			snprintf(why, wlen, "offset %ld: byte 0x%02x, expected 0x%02x of acknowledged write gen %d [%ld, +%ld) (or a later write); found %s%d; %ld bad bytes from there",
				 o, rbuf[o], want, a, wrs[a].off, wrs[a].len,
				 from >= 0 ? "older write gen " : "no write's pattern ", from, run);
		else
			snprintf(why, wlen, "offset %ld: byte 0x%02x where no acknowledged write lands (zero or a later write expected); found %s%d",
				 o, rbuf[o], from >= 0 ? "write gen " : "no write's pattern ", from);
		return 1;
	}
	return 0;
}

static void check_cycle(void)
{
	char p[4200], why[400];
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (stat(cdir, &st)) {
		finding(K_DIR, "%s (made stable by mkdir, fsync of its parent and sync) is missing: %s",
			cdir, strerror(errno));
		return;
	}
	/* Names the workload never made. */
	d = opendir(cdir);
	while (d && (e = readdir(d))) {
		int known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");

		for (int i = 0; i < NNAMES + NDIRS && !known; i++)
			known = !strcmp(e->d_name, names[i].s);
		if (!known)
			finding(K_STRAY, "unexpected name %s/%s", cdir, e->d_name);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < NNAMES + NDIRS; i++) {
		struct name *n = &names[i];
		int from = 0, ok = 0, found, tested = -1;

		for (int k = 0; k < n->n; k++)
			if (n->h[k].acked)
				from = k;
		path_of(n->s, p, sizeof(p));
		found = lstat(p, &st) ? ABSENT : S_ISDIR(st.st_mode) ? DIR_ :
			S_ISREG(st.st_mode) ? FILE_ : -1;
		why[0] = 0;
		for (int k = n->n - 1; k >= from && !ok; k--) {
			if (n->h[k].kind != found)
				continue;
			if (found == FILE_) {
				tested = n->h[k].fid;
				ok = !check_file(p, tested, why, sizeof(why));
			}
			else
				ok = 1;
		}
		if (ok)
			continue;
		if (why[0])
			finding(strncmp(why, "size", 4) ? K_DATA : K_SIZE,
				"%s/%s: file %d: %s; name states: %s", cdir, n->s, tested, why,
				history(n, from));
		else
			finding(K_NAME, "%s/%s is %s; allowed: its states from the last acknowledged one on: %s",
				cdir, n->s, kind_name(found, -1, why, sizeof(why)),
				history(n, from));
	}
}

/* --- one cycle ------------------------------------------------------------------------ */

static int remount(void)
{
	char cmd[8500];

	snprintf(cmd, sizeof(cmd), "umount %s && mount -t pohmel -o hard %s:/ %s",
		 mnt, srv, mnt);
	return system(cmd);
}

/* A failing cycle's operations, from the journal (at most 200 lines). */
static void dump_journal(long from)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(jpath, "r");

	if (!f || fseek(f, from, SEEK_SET)) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) && n++ < 200)
		printf("powercut: journal: %s", line);
	fclose(f);
}

static int run_cycle(void)
{
	char old[64];
	int after = 0, ops = 0, ack_mode = rnd_below(2), refsync = rnd_below(2);
	int crash_at = 3 + rnd_below(40), rfd, f0 = failures;
	double t0 = now(), back, t_work, t_post;
	long jstart;
	pthread_t th;

	mode = ack_mode ? "ack" : "async";
	nwr = nfid = 0;
	crashed = 0;
	for (int i = 0; i < NNAMES + NDIRS; i++) {
		snprintf(names[i].s, sizeof(names[i].s), i < NNAMES ? "n%02d" : "d%d",
			 i < NNAMES ? i : i - NNAMES);
		names[i].n = 1;
		names[i].h[0] = (struct nstate){ ABSENT, -1, 1 };
	}
	snprintf(cdir, sizeof(cdir), "%s/c%03d", mnt, cycle);
	if (mkdir(cdir, 0755) || (dirfd_ = open(cdir, O_RDONLY | O_DIRECTORY)) < 0) {
		printf("powercut: cycle %d: mkdir/open %s: %s\n", cycle, cdir, strerror(errno));
		return -1;
	}
	rfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (rfd < 0 || fsync(rfd))
		printf("powercut: cycle %d: fsync of %s: %s\n", cycle, mnt, strerror(errno));
	if (rfd >= 0)
		close(rfd);
	sync();
	jstart = jf ? ftell(jf) : 0;
	jlog("cycle %d mode %s crash_at %d refsync %d", cycle, mode, crash_at, refsync);
	snprintf(old, sizeof(old), "%s", boot_id);
	if (!ack_mode) {
		/* Roughly the time a few dozen operations take under TCG. */
		crash_delay_us = 20000 + rnd_below(400000);
		pthread_create(&th, NULL, crasher, NULL);
	}
	for (;;) {
		int acked = one_op(&after);

		ops++;
		if (ack_mode && acked && ops >= crash_at) {
			crash();
			crashed = 1;
			break;
		}
		if (__atomic_load_n(&crashed, __ATOMIC_SEQ_CST))
			break;
		if (ops >= MAXOPS) {
			if (ack_mode) {
				crash();
				crashed = 1;
			}
			break;
		}
	}
	if (!ack_mode)
		pthread_join(th, NULL);
	jlog("crash sent after %d ops", ops);
	t_work = now() - t0;
	if (wait_reboot(old, &back)) {
		printf("powercut: cycle %d: the server VM did not come back in 300 s\n", cycle);
		return -1;
	}
	/* Re-fsync every open file: the writes before the crash are
	 * acknowledged by an fsync after it (the client resends them). */
	if (refsync) {
		for (int f = 0; f < nfid; f++) {
			int upto = nwr;

			if (fobjs[f].fd < 0)
				continue;
			if (fsync(fobjs[f].fd) == 0) {
				for (int i = 0; i < upto; i++)
					if (wrs[i].fid == f)
						wrs[i].acked = 1;
				jlog("post-crash fsync fid %d ok", f);
			} else {
				jlog("post-crash fsync fid %d: %s", f, strerror(errno));
			}
		}
	}
	for (int f = 0; f < nfid; f++)
		if (fobjs[f].fd >= 0)
			close(fobjs[f].fd);
	close(dirfd_);
	if (remount()) {
		printf("powercut: cycle %d: remount failed\n", cycle);
		return -1;
	}
	t_post = now() - t0 - t_work - back;
	check_cycle();
	printf("powercut: cycle %d mode %s: %d ops, %d writes, %d files, crash %s, %s, %s; workload %.1fs, server back in %.1fs, refsync+close+remount %.1fs, cycle %.1fs\n",
	       cycle, mode, ops, nwr, nfid, ack_mode ? "after an acknowledgement" : "asynchronous",
	       refsync ? "re-fsynced after" : "no fsync after", failures == f0 ? "ok" : "FAILED",
	       t_work, back, t_post, now() - t0);
	if (failures != f0)
		dump_journal(jstart);
	fflush(stdout);
	return failures != f0;
}

int main(int argc, char **argv)
{
	int c, bad = 0;
	double t0 = now();

	while ((c = getopt(argc, argv, "m:s:n:S:kj:c:")) != -1) {
		switch (c) {
		case 'm': mnt = optarg; break;
		case 's': srv = optarg; break;
		case 'n': cycles = atoi(optarg); break;
		case 'S': seed0 = strtoull(optarg, NULL, 0); break;
		case 'k': keep_going = 1; break;
		case 'j': jpath = optarg; break;
		case 'c': crash_cmd = strcmp(optarg, "kill") ? 'b' : 'k'; break;
		default:
			fprintf(stderr, "usage: powercut -m MNT -s SERVER_IP -n CYCLES -S SEED [-k] [-j JOURNAL] [-c kill]\n");
			return 2;
		}
	}
	if (!mnt || !srv) {
		fprintf(stderr, "powercut: -m and -s are required\n");
		return 2;
	}
	rng = seed0 * 2654435761ULL + 1;
	jf = fopen(jpath, "w");
	if (ctl_connect(boot_id, sizeof(boot_id))) {
		fprintf(stderr, "powercut: no control connection to %s:%d\n", srv, CTL_PORT);
		return 2;
	}
	printf("powercut: seed %llu, %d cycles, crash by %s, server boot %s\n", seed0, cycles,
	       crash_cmd == 'b' ? "machine reset (sysrq b)" : "killing pohmeld", boot_id);
	for (cycle = 0; cycle < cycles; cycle++) {
		int r = run_cycle();

		if (r < 0)
			return 2;
		bad += r;
		if (r && !keep_going)
			break;
	}
	printf("powercut: %d of %d cycles found losses (%d findings:", bad,
	       cycle < cycles ? cycle + 1 : cycles, failures);
	for (int k = 0; k < K_N; k++)
		printf(" %s %d", kinds[k], by_kind[k]);
	printf("; %d notes), seed %llu, %.1fs\n", notes, seed0, now() - t0);
	return failures ? 1 : 0;
}
