// SPDX-License-Identifier: MIT
/*
 * test_check.c - what `pohmeld -n` and a start refuse (each with the
 * FILE:LINE it comes from and a non-zero exit), and SIGHUP: a reloaded
 * configuration applies to new connections while an old one keeps its
 * own; a broken one is refused with a log line and the old one stays.
 * argv[1]: the pohmeld to run (the ASan build in run-tests).
 */
#include <grp.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include "integ_lib.h"

static char exp_dir[128];
static char out[16384];

enum how { AS_IS, NOBODY, NO_SETUID, ACTIVATED, START };

/* Run pohmeld -n (or a plain start: START) on conf; its stdout and
 * stderr go to out; returns the exit status. */
static int run_n(const char *conf, enum how how)
{
	char cpath[256], opath[256];
	int st, fd;
	ssize_t n;
	pid_t pid;

	snprintf(cpath, sizeof(cpath), "%s/n.conf", base);
	snprintf(opath, sizeof(opath), "%s/n.out", base);
	if (write_file(cpath, conf) || chmod(cpath, 0644))
		return -1;
	pid = fork();
	if (pid == 0) {
		char p[32];

		fd = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (how == NOBODY && (setgroups(0, NULL) ||
				      setresgid(65534, 65534, 65534) ||
				      setresuid(65534, 65534, 65534)))
			_exit(126);
		/* Root's exec refills permitted from the bounding set. */
		if (how == NO_SETUID && prctl(PR_CAPBSET_DROP, CAP_SETUID))
			_exit(126);
		if (how == START) {
			/* A server that wrongly starts serves a loopback
			 * socket of its own, and not for ever. */
			struct sockaddr_in sin = {
				.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
			};
			int l = socket(AF_INET, SOCK_STREAM, 0);

			if (l < 0 || bind(l, (void *)&sin, sizeof(sin)) ||
			    listen(l, 1) || dup2(l, 3) != 3)
				_exit(126);
			alarm(20);
		}
		if (how == ACTIVATED || how == START) {
			snprintf(p, sizeof(p), "%d", getpid());
			setenv("LISTEN_PID", p, 1);
			setenv("LISTEN_FDS", "1", 1);
		}
		if (how == START)
			execl(server_bin, server_bin, "-c", cpath, (char *)NULL);
		else
			execl(server_bin, server_bin, "-n", "-c", cpath,
			      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	fd = open(opath, O_RDONLY);
	n = fd >= 0 ? read(fd, out, sizeof(out) - 1) : -1;
	out[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	/* one line per check in the test's output */
	for (n = 0; out[n]; n++)
		if (out[n] == '\n')
			out[n] = '|';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* -n on conf fails, and says want (after "n.conf:"). */
static void refused(const char *conf, enum how how, const char *want,
		    const char *what)
{
	int rc = run_n(conf, how);

	CHECK(rc == 1 && strstr(out, want), "%s: exit %d, says '%s' (got '%s')",
	      what, rc, want, out);
}

static void check_n(void)
{
	char conf[1024], want[1200], key[256], sfile[256];

	snprintf(key, sizeof(key), "%s/key", base);
	snprintf(sfile, sizeof(sfile), "%s/sfile", base);
	write_file(key, "00112233445566778899aabbccddeeff\n");
	write_file(sfile, "x\n");

	snprintf(conf, sizeof(conf),
		 "export / %s rw\nstate-dir %s/state\nkey-file %s\n",
		 exp_dir, base, key);
	CHECK(run_n(conf, AS_IS) == 0 && strstr(out, "configuration OK"),
	      "a good configuration passes (got '%s')", out);

	chmod(key, 0644);
	snprintf(want, sizeof(want),
		 "n.conf:3: key-file %s: mode 0644 lets group or others read or write it",
		 key);
	refused(conf, AS_IS, want, "key file readable by all");
	{
		int rc = run_n(conf, START);

		CHECK(rc == 1 && strstr(out, "<3>") && strstr(out, want),
		      "a start refuses it with the same line (exit %d, '%s')",
		      rc, out);
	}
	chmod(key, 0620);
	refused(conf, AS_IS, "mode 0620 lets group or others",
		"key file writable by its group");
	chmod(key, 0600);
	if (geteuid() == 0) {
		if (chown(key, 12345, 0))
			return;
		refused(conf, AS_IS,
			"n.conf:3: key-file", "key file owned by another user");
		CHECK(strstr(out, "owned by uid 12345, not by root"),
		      "... names the owner (got '%s')", out);
		if (chown(key, 0, 0))
			return;
	} else {
		SKIP("key file owned by another user: needs root");
	}

	/* named keys: a bad file names its line; sec=/keys= checked */
	write_file(key, "a 00112233445566778899aabbccddeeff\n"
		   "b 00112233445566778899aabbccddeeff\n"
		   "a ffeeddccbbaa99887766554433221100\n");
	snprintf(want, sizeof(want), "%s:3: key name 'a' given twice", key);
	refused(conf, AS_IS, want, "key file with a name given twice");
	write_file(key, "a 00112233445566778899aabbccddeeff\n"
		   "b c 00112233445566778899aabbccddeeff\n");
	snprintf(want, sizeof(want), "%s:2: expected NAME HEX", key);
	refused(conf, AS_IS, want, "key file with a bad line");
	write_file(key, "a 00112233445566778899aabbccddeeff\n"
		   "b 00112233445566778899aabbccddeeff\n");
	snprintf(conf, sizeof(conf),
		 "export / %s rw sec=seal keys=a,zz\nstate-dir %s/state\nkey-file %s\n",
		 exp_dir, base, key);
	CHECK(run_n(conf, AS_IS) == 0 && strstr(out, "configuration OK") &&
	      strstr(out, "keys=zz: no such key"),
	      "sec=seal keys=a,zz: passes, warns about zz (got '%s')", out);
	snprintf(conf, sizeof(conf),
		 "export / %s rw sec=auth\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	refused(conf, AS_IS, "sec=auth needs keys, but there is no key file",
		"sec=auth without a key file");
	snprintf(conf, sizeof(conf), "export / %s rw sec=strong\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS, "n.conf:1: sec=strong: expected none, auth or seal",
		"sec= with a bad value");
	snprintf(conf, sizeof(conf), "export / %s rw keys=a,b/c\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS, "n.conf:1: keys=: bad key name 'b/c'",
		"keys= with a bad name");
	snprintf(conf, sizeof(conf), "export / %s rw sec=auth sec=seal\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS, "'sec=' given twice", "sec= given twice");
	/* admin= (pohmel clients): names keys, checked as keys= is */
	snprintf(conf, sizeof(conf),
		 "export / %s rw keys=a admin=b,zz\nstate-dir %s/state\nkey-file %s\n",
		 exp_dir, base, key);
	CHECK(run_n(conf, AS_IS) == 0 && strstr(out, "configuration OK") &&
	      strstr(out, "admin=zz: no such key") &&
	      strstr(out, "admin=b: not in keys=, so it cannot connect"),
	      "keys=a admin=b,zz: passes, warns about both (got '%s')", out);
	snprintf(conf, sizeof(conf), "export / %s rw admin=a\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS, "admin= names keys, but there is no key file",
		"admin= without a key file");
	snprintf(conf, sizeof(conf), "export / %s rw admin=a admin=b\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS, "'admin=' given twice", "admin= given twice");
	write_file(key, "00112233445566778899aabbccddeeff\n");

	snprintf(conf, sizeof(conf), "export / %s rw ro\nkey-file none\n",
		 exp_dir);
	refused(conf, AS_IS,
		"n.conf:1: export options 'rw' and 'ro' contradict each other",
		"rw ro on one line");
	snprintf(conf, sizeof(conf),
		 "key-file none\nexport / %s no_root_squash root_squash\n",
		 exp_dir);
	refused(conf, AS_IS,
		"n.conf:2: export options 'no_root_squash' and 'root_squash' contradict",
		"no_root_squash root_squash on one line");

	snprintf(conf, sizeof(conf),
		 "export / %s\nstate-dir %s\nkey-file none\n", exp_dir, sfile);
	snprintf(want, sizeof(want),
		 "n.conf:2: state-dir %s: %s is not a directory", sfile, sfile);
	refused(conf, AS_IS, want, "state directory is a regular file");
	snprintf(conf, sizeof(conf),
		 "export / %s\nstate-dir %s/sub\nkey-file none\n", exp_dir,
		 sfile);
	refused(conf, AS_IS, "n.conf:2: state-dir", "state directory under a file");

	snprintf(conf, sizeof(conf), "key-file none\nexport / %s/nope\n", base);
	snprintf(want, sizeof(want),
		 "n.conf:2: export %s/nope: No such file or directory", base);
	refused(conf, AS_IS, want, "export missing");
	snprintf(conf, sizeof(conf), "key-file none\nexport / %s\n", sfile);
	snprintf(want, sizeof(want), "n.conf:2: export %s: not a directory",
		 sfile);
	refused(conf, AS_IS, want, "export not a directory");
	refused("key-file none\nexport / /proc\n", AS_IS,
		"n.conf:2: export /proc: on a proc file system",
		"export on /proc");
	refused("key-file none\nexport / /sys\n", AS_IS,
		"n.conf:2: export /sys: on a sysfs file system",
		"export on /sys");

	snprintf(conf, sizeof(conf),
		 "export / %s rw\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	if (geteuid() == 0) {
		/* nobody must read the file and search base */
		chmod(base, 0755);
		refused(conf, NOBODY,
			"running as uid 65534 without CAP_SETUID CAP_SETGID CAP_DAC_READ_SEARCH",
			"not root, no capabilities");
		snprintf(want, sizeof(want),
			 "n.conf:2: state-dir %s/state: parent %s is not writable",
			 base, base);
		CHECK(strstr(out, want), "... and the state directory cannot be made (got '%s')",
		      out);
		chmod(base, 0700);
		refused(conf, NO_SETUID, "running as uid 0 without CAP_SETUID:",
			"root without CAP_SETUID");
	} else {
		SKIP("privilege checks: need root to drop privileges");
	}

	snprintf(conf, sizeof(conf),
		 "export / %s rw\nstate-dir %s/state\nkey-file none\nport 7350\n",
		 exp_dir, base);
	CHECK(run_n(conf, ACTIVATED) == 0 && strstr(out, "warning: ") &&
	      strstr(out, "n.conf:4: port 7350 is ignored"),
	      "port under socket activation: a warning (got '%s')", out);
	CHECK(run_n(conf, AS_IS) == 0 && !strstr(out, "port"),
	      "port without socket activation: no warning (got '%s')", out);
}

/* Write conf as the server's file, SIGHUP, wait for the outcome's log
 * line (the n-th of its kind): true if it came. */
static bool hup(struct srvproc *s, const char *conf, const char *outcome,
		int nth)
{
	char path[512];
	int i;

	snprintf(path, sizeof(path), "%s/hup.conf", base);
	if (write_file(path, conf) || kill(s->pid, SIGHUP))
		return false;
	for (i = 0; i < 2000 && log_count("hup", outcome) < nth; i++)
		usleep(10000);
	return log_count("hup", outcome) >= nth;
}

/* uuid: the session to claim, NULL for a new one. */
static int keyed_as(struct pc *c, const struct srvproc *s, const char *key,
		    const struct pc *uuid)
{
	int err;

	if (pc_init(c))
		return -ENOMEM;
	if (pc_load_key(c, key))
		return -EINVAL;
	if (uuid) {
		memcpy(c->uuid, uuid->uuid, 16);
		c->boot_gen = uuid->boot_gen;
	}
	err = pc_connect(c, "127.0.0.1", s->port);
	return err ? err : pc_handshake(c);
}

static int keyed(struct pc *c, const struct srvproc *s, const char *key)
{
	return keyed_as(c, s, key, NULL);
}

static int create(struct pc *c, const char *name)
{
	struct wattr a;

	return pc_mkobj(c, POHMEL_OP_CREATE, &c->root.oid, name, 0644, 0, 0,
			NULL, &a, NULL);
}

static void check_reload(void)
{
	char conf[2048], k1[256], k2[256], fmt[] =
		"export / %s %s no_root_squash allow=%s\nstate-dir %s/state\n"
		"key-file %s\n";
	struct srvproc s;
	struct pc a, b;

	snprintf(k1, sizeof(k1), "%s/k1", base);
	snprintf(k2, sizeof(k2), "%s/k2", base);
	write_file(k1, "00112233445566778899aabbccddeeff\n");
	write_file(k2, "ffeeddccbbaa99887766554433221100\n");
	snprintf(conf, sizeof(conf), "port 7350\n");
	snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf), fmt,
		 exp_dir, "rw", "127.0.0.0/8", base, k1);
	if (start_server("hup", conf, &s)) {
		CHECK(0, "server starts");
		return;
	}
	CHECK(server_log_has("hup", "<4>") &&
	      server_log_has("hup", "hup.conf:1: port 7350 is ignored"),
	      "start under socket activation warns that port is ignored");
	CHECK(keyed(&a, &s, k1) == 0 && create(&a, "a1") == 0,
	      "old connection: key 1, creates (rw)");

	/* ro, the same key: the old connection keeps its (rw) policy */
	snprintf(conf, sizeof(conf), fmt, exp_dir, "ro", "127.0.0.0/8", base,
		 k1);
	CHECK(hup(&s, conf, "reloaded: serving", 1),
	      "SIGHUP: reloaded (logged)");
	CHECK(keyed(&b, &s, k1) == 0 && create(&b, "b0") == EROFS,
	      "new connection: the export now ro (EROFS)");
	cl_close(&b);
	CHECK(create(&a, "a2") == 0 && pc_ping(&a) == 0,
	      "old connection keeps working under its own (rw) policy");

	/* key 2: key 1 is revoked, its live connection closed */
	snprintf(conf, sizeof(conf), fmt, exp_dir, "ro", "127.0.0.0/8", base,
		 k2);
	CHECK(hup(&s, conf, "reloaded: serving", 2),
	      "SIGHUP: reloaded with another key");
	CHECK(keyed(&b, &s, k1) != 0, "new connection with the old key refused");
	cl_close(&b);
	CHECK(keyed(&b, &s, k2) == 0 && create(&b, "b1") == EROFS,
	      "new connection: the new key, the export ro (EROFS)");
	CHECK(pc_ping(&a) < 0 &&
	      server_log_has("hup", "key 'default' revoked"),
	      "the old key's live connection is closed (revoked, logged)");
	cl_close(&b);
	CHECK(keyed_as(&b, &s, k2, &a) == EACCES &&
	      server_log_has("hup", "was made under another key"),
	      "the new key cannot claim a session made under the old one");
	cl_close(&a);

	/* broken: refused, ro and key 2 stay */
	snprintf(conf, sizeof(conf), "export / %s rw ro\nstate-dir %s/state\n",
		 exp_dir, base);
	CHECK(hup(&s, conf, "configuration refused", 1) &&
	      server_log_has("hup", "<3>") &&
	      server_log_has("hup",
			     "hup.conf:1: export options 'rw' and 'ro' contradict each other"),
	      "SIGHUP with a broken file: refused, the line logged");
	cl_close(&b);
	CHECK(keyed(&a, &s, k2) == 0 && create(&a, "b2") == EROFS,
	      "after it: key 2 and ro still in force");
	chmod(k2, 0644);
	snprintf(conf, sizeof(conf), fmt, exp_dir, "rw", "127.0.0.0/8", base,
		 k2);
	CHECK(hup(&s, conf, "configuration refused", 2) &&
	      server_log_has("hup", "hup.conf:3: key-file"),
	      "SIGHUP with a key file readable by all: refused");
	chmod(k2, 0600);
	snprintf(conf, sizeof(conf), fmt, base, "rw", "127.0.0.0/8", base, k2);
	CHECK(hup(&s, conf, "configuration refused", 3) &&
	      server_log_has("hup", "the export directory changed"),
	      "SIGHUP moving the export directory: refused (needs a restart)");

	/* an allow list without us */
	snprintf(conf, sizeof(conf), fmt, exp_dir, "ro", "10.0.0.0/8", base,
		 k2);
	CHECK(hup(&s, conf, "reloaded: serving", 3), "SIGHUP: reloaded again");
	CHECK(keyed(&b, &s, k2) != 0 &&
	      server_log_has("hup", ": refused a client not in the allow list (allow=)"),
	      "new connection outside the new allow list refused, logged with its address");
	cl_close(&b);
	CHECK(create(&a, "a3") == EROFS && pc_bye(&a) == 0,
	      "old connection still served, ends cleanly");
	cl_close(&a);
	CHECK(stop_server(&s) == 0,
	      "server stops cleanly (ASan: no use-after-free or leak)");
}

/*
 * Reloads racing connections (ASan): each client is accepted under one
 * policy or the other and must be served whole; the policies it held
 * are freed when it goes, while others are swapped in.
 */
static void check_reload_race(void)
{
	char conf[1024], path[512], tmp[512];
	int i, ok = 0, reloads;
	struct srvproc s;
	struct pc c;

	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	if (start_server("race", conf, &s)) {
		CHECK(0, "race server starts");
		return;
	}
	snprintf(path, sizeof(path), "%s/race.conf", base);
	snprintf(tmp, sizeof(tmp), "%s/race.conf.new", base);
	for (i = 0; i < 40; i++) {
		snprintf(conf, sizeof(conf),
			 "export / %s %s no_root_squash\nstate-dir %s/state\nkey-file none\n",
			 exp_dir, i % 2 ? "ro" : "rw", base);
		/* whole files only: a reload reads it at any moment */
		if (write_file(tmp, conf) || rename(tmp, path) ||
		    kill(s.pid, SIGHUP))
			break;
		if (cl_open(&c, &s, 0, 0) == 0 && pc_ping(&c) == 0)
			ok++;
		cl_close(&c);
	}
	CHECK(ok == 40, "40 clients served while reloads swap the policy (%d)",
	      ok);
	CHECK(stop_server(&s) == 0, "race server stops cleanly (ASan)");
	reloads = log_count("race", "reloaded: serving");
	CHECK(reloads >= 1 && log_count("race", "configuration refused") == 0,
	      "reloads done (%d), none refused", reloads);
}

int main(int argc, char **argv)
{
	int rc = setup_base(argc, argv, "conf", exp_dir, sizeof(exp_dir));

	if (rc)
		return rc;
	check_n();
	check_reload();
	check_reload_race();
	return finish_base();
}
