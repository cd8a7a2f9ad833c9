#!/usr/bin/env python3
"""Turn the guest's BENCH lines into latest.md, latest.json and latest.png.

    report.py --log OUTPUT.LOG --host HOST.JSON --out DIR

Per (delay, filesystem, workload): the median wall time of the repetitions,
its spread (min..max), ratios against local ext4 and against NFSv4.2 at the
same delay, network messages, server CPU time and server resident memory.
pohmelfs is one filesystem per protection (pohmel-none, pohmel-auth,
pohmel-seal: mounted with sec=none|auth|seal; "pohmel" in older logs): the
report shows the protection each mount had (BENCH-PROT lines) and the cost
of auth and seal against none. A workload that failed (or could not run) is
reported as failed, never dropped. stdlib only; the PNG needs matplotlib and
is skipped without it.
"""
import argparse
import json
import os
import statistics
import sys

FS_ORDER = ["ext4", "tmpfs", "pohmel", "pohmel-none", "pohmel-wb",
            "pohmel-auth", "pohmel-seal", "pohmel-chacha", "nfs3", "nfs4", "smb3", "9p"]
FS_LABEL = {"ext4": "ext4 (local)", "tmpfs": "tmpfs", "nfs3": "NFSv3 async",
            "nfs4": "NFSv4.2", "smb3": "SMB3 (Samba)", "9p": "9p (diod)",
            "pohmel": "pohmelfs",
            "pohmel-none": "pohmelfs (sec=none)",
            "pohmel-wb": "pohmelfs (sec=none, writeback=on)",
            "pohmel-auth": "pohmelfs (sec=auth)",
            "pohmel-seal": "pohmelfs (sec=seal)",
            "pohmel-chacha": "pohmelfs (sec=seal, ChaCha20-Poly1305)"}
# pohmelfs's columns: "pohmel" (older logs: the harness's default mounts,
# without a key) and one per protection (guest.sh's pohmel-SEC).
POHMEL = ("pohmel", "pohmel-none", "pohmel-wb", "pohmel-auth",
          "pohmel-seal", "pohmel-chacha")
# The column the targets are checked on: the default deployment
# (sealed, with a key) when it was measured.
TARGET_FS = ("pohmel-seal", "pohmel", "pohmel-auth", "pohmel-none")
# Cost of protection: workloads whose cost is a throughput (% of sec=none's),
# the others a wall-time ratio; the README's target for sealing.
THROUGHPUT = ("seq_write", "seq_read_cold", "seq_read_warm")
SEAL_TARGET = 0.85
# What a mount's "protection:" line starts with for each sec= (as guest.sh
# checks it).
PROT_PREFIX = {"seal": "seal ", "auth": "auth ",
               "none": "none (key checked at connect)"}
WL_ORDER = ["untar", "find", "git_status", "rm", "create", "stat", "unlink",
            "seq_write", "seq_read_cold", "seq_read_warm", "rand_read",
            "parallel", "many"]
LOCAL = ("ext4", "tmpfs")


def wl_label(wl, g):
    return {
        "untar": "untar + sync (%s files)" % g.get("files", "?"),
        "find": "warm find -ls",
        "git_status": "warm git status",
        "rm": "rm -r + sync",
        "create": "create %s × 4 KiB" % g.get("small", "?"),
        "stat": "stat %s" % g.get("small", "?"),
        "unlink": "unlink %s" % g.get("small", "?"),
        "seq_write": "seq write %s MiB + fsync" % g.get("seq_mb", "?"),
        "seq_read_cold": "seq read, cold cache",
        "seq_read_warm": "seq read, warm cache",
        "rand_read": "random 4 KiB reads × %s (cold)" % g.get("rand_ops", "?"),
        "parallel": "parallel: %s procs × %s files, 2 mounts" % (
            g.get("par", "?"), g.get("par_files", "?")),
        "many": "many: %s clients at once, each its own mount and network namespace"
                % g.get("many", "?"),
    }.get(wl, wl)


def parse(path):
    guest, runs, skips, pohmeld, prots = {}, [], [], {}, []
    global MANY_RUNS
    MANY_RUNS = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            tag, _, rest = line.partition(" ")
            if tag not in ("BENCH", "BENCH-INFO", "BENCH-SKIP", "BENCH-POHMELD",
                           "BENCH-PROT", "BENCH-MANY"):
                continue
            try:
                obj = json.loads(rest)
            except ValueError:
                print("report: unparsable line: %s" % line[:120], file=sys.stderr)
                continue
            if tag == "BENCH":
                runs.append(obj)
            elif tag == "BENCH-INFO":
                guest = obj
            elif tag == "BENCH-SKIP":
                skips.append(obj)
            elif tag == "BENCH-PROT":
                prots.append(obj)
            elif tag == "BENCH-MANY":
                MANY_RUNS.append(obj)
            else:
                pohmeld = obj
    return guest, runs, skips, pohmeld, prots


# BENCH-MANY lines of the log parse() read last (kept apart: the other
# callers of parse() take five values).
MANY_RUNS = []


def many_markdown():
    """The many workload's fairness: the spread of the clients' median
    latencies (issue 17: no client's median more than 3x the others')."""
    if not MANY_RUNS:
        return []
    L = ["Many clients (the `many` row): each client's median latency over its "
         "create, write, fsync, stat, read, rename+unlink operations; the "
         "smallest, middle and largest of those medians, and the largest "
         "against the middle one (the fairness figure; below 3 meets the "
         "issue's bound) and against the smallest:", "",
         "| filesystem | delay | clients | smallest | middle | largest | largest / middle | largest / smallest |",
         "|---|---|---|---|---|---|---|---|"]
    for m in MANY_RUNS:
        lo, mid, hi = (m.get(k) for k in ("median_min_us", "median_mid_us",
                                          "median_max_us"))
        if not (lo and mid and hi):
            continue
        L.append("| %s | %s | %s | %.1f ms | %.1f ms | %.1f ms | %.2f× | %.2f× |" % (
            FS_LABEL.get(m["fs"], m["fs"]), delay_short(m["delay"]),
            m.get("clients", "?"), lo / 1000, mid / 1000, hi / 1000,
            hi / mid, hi / lo))
    L.append("")
    return L


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def aggregate(guest, runs, skips):
    cells = {}
    for r in runs:
        c = cells.setdefault((r["delay"], r["fs"], r["wl"]), {
            "delay": r["delay"], "fs": r["fs"], "wl": r["wl"], "secs": [],
            "msgs": [], "srv_cpu": [], "srv_rss_kb": [], "errors": []})
        if r.get("ok"):
            c["secs"].append(r["secs"])
            c["msgs"].append(r.get("msgs"))
            c["srv_cpu"].append(r.get("srv_cpu"))
            c["srv_rss_kb"].append(r.get("srv_rss_kb"))
        else:
            c["errors"].append(r.get("error", "failed"))
    delays = [d for d in str(guest.get("delays", "")).split() if d]
    for d in sorted(({c["delay"] for c in cells.values()} |
                     {x["delay"] for x in skips}) - {"local"}):
        if d not in delays:
            delays.append(d)
    # A filesystem that could not be set up (one line per repetition; older
    # logs: one per delay): every workload gets that repetition as failed
    # with the reason ("skipped" only when it was not requested).
    for s in skips:
        kind = "skipped" if s["why"].startswith("not requested") else "not run"
        for wl in WL_ORDER:
            c = cells.setdefault((s["delay"], s["fs"], wl), {
                "delay": s["delay"], "fs": s["fs"], "wl": wl, "secs": [],
                "msgs": [], "srv_cpu": [], "srv_rss_kb": [], "errors": []})
            c["errors"].append("%s: %s" % (kind, s["why"]))
    # A run cut short (guest time limit, crash): the repetitions that never
    # reported are counted as missing, never silently dropped.
    planned = guest.get("reps") or 0
    fslist = str(guest.get("fs", "")).split()
    for d in delays + ["local"]:
        for fs in fslist:
            if (fs in LOCAL) != (d == "local"):
                continue
            for wl in WL_ORDER:
                c = cells.setdefault((d, fs, wl), {
                    "delay": d, "fs": fs, "wl": wl, "secs": [], "msgs": [],
                    "srv_cpu": [], "srv_rss_kb": [], "errors": []})
                c["missing"] = max(0, planned - len(c["secs"]) - len(c["errors"]))
    out = []
    for c in cells.values():
        s = c["secs"]
        ok = bool(s) and not c["errors"]
        rss = [x for x in c["srv_rss_kb"] if x is not None]
        out.append({
            "delay": c["delay"], "fs": c["fs"], "wl": c["wl"],
            "ok": ok, "reps": s, "n_ok": len(s), "n_failed": len(c["errors"]),
            "n_missing": c.get("missing", 0),
            "median_s": med(s) if s else None,
            "min_s": min(s) if s else None, "max_s": max(s) if s else None,
            "msgs_median": med(c["msgs"]),
            "srv_cpu_median_s": med(c["srv_cpu"]),
            "srv_rss_kb_max": max(rss) if rss else None,
            "error": c["errors"][0] if c["errors"] else None,
        })
    idx = {(r["delay"], r["fs"], r["wl"]): r for r in out}

    def base(delay, fs, wl):
        r = idx.get((delay, fs, wl)) or idx.get(("local", fs, wl))
        return r["median_s"] if r and r["ok"] else None

    for r in out:
        d = r["delay"]
        for key, ref in (("ratio_ext4", "ext4"), ("ratio_nfs4", "nfs4")):
            b = base(d, ref, r["wl"]) if d != "local" else (
                base("local", ref, r["wl"]) if ref == "ext4" else None)
            r[key] = (r["median_s"] / b) if (r["ok"] and b) else None
    keyf = lambda r: (r["delay"] != "local", r["delay"],
                      FS_ORDER.index(r["fs"]) if r["fs"] in FS_ORDER else 99,
                      WL_ORDER.index(r["wl"]) if r["wl"] in WL_ORDER else 99)
    out.sort(key=keyf)
    return out, idx, delays


def fmt_s(x):
    if x is None:
        return "–"
    return "%.3g" % x if x < 10 else "%.0f" % x


def columns(results, delay):
    present = {r["fs"] for r in results if r["delay"] in (delay, "local")}
    return [f for f in FS_ORDER if f in present]


def cell_time(idx, delay, fs, wl):
    r = idx.get((delay, fs, wl)) or idx.get(("local", fs, wl))
    if r is None:
        return "n/a"
    err = r["error"] or ""
    if not r["n_ok"]:
        if err.startswith("skipped"):
            return "skipped"
        if not err:
            return "**not run**"
        if err.startswith("not run: ") and "timed out" in err:
            return "**not run (after a timeout)**"
        if err.startswith("not run"):
            return "**failed (setup)**"
        return "**timed out**" if "timed out" in err else "**failed**"
    m, lo, hi = r["median_s"], r["min_s"], r["max_s"]
    spread = (hi - lo) / 2 / m * 100 if m else 0
    t = "%s s ±%.0f%%" % (fmt_s(m), spread) if r["n_ok"] > 1 else "%s s" % fmt_s(m)
    bad = r["n_failed"] + r.get("n_missing", 0)
    if r["n_failed"]:
        t += " (**%d of %d failed**)" % (r["n_failed"], r["n_ok"] + bad)
    elif bad:
        t += " (%d of %d not run)" % (bad, r["n_ok"] + bad)
    return t


def cell_ratio(idx, delay, fs, wl, key):
    r = idx.get((delay, fs, wl)) or idx.get(("local", fs, wl))
    if r is None:
        return "n/a"
    if not r["ok"]:
        return "failed" if r["n_failed"] or not r["n_ok"] else "–"
    v = r[key]
    if v is None:
        return "–"
    return "%.2f×" % v if v < 10 else "%.0f×" % v


def delay_title(d):
    return ("%s ms round trip added on lo (tc netem)" % d) if d != "0" else \
        "no added delay"


def delay_short(d):
    return ("%s ms" % d) if d != "0" else "no delay"


def cost_rows(idx, delays):
    """auth and seal against none, per workload and delay: a list of dicts
    (wl, delay, sec, kind "throughput"|"time", value or None, why, partial:
    some repetitions of either failed or never ran; the medians are of the
    others)."""
    rows = []
    for wl in WL_ORDER:
        for d in delays:
            n = idx.get((d, "pohmel-none", wl))
            for sec in ("auth", "seal", "chacha"):
                x = idx.get((d, "pohmel-" + sec, wl))
                if n is None and x is None:
                    continue
                kind = "throughput" if wl in THROUGHPUT else "time"
                row = {"wl": wl, "delay": d, "sec": sec, "kind": kind,
                       "value": None, "why": None, "partial": False}
                if not n or not n["n_ok"] or not x or not x["n_ok"]:
                    failed = any(r and (r["n_failed"] or not r["n_ok"])
                                 for r in (n, x))
                    row["why"] = "failed" if failed else "n/a"
                    rows.append(row)
                    continue
                row["partial"] = any(r["n_failed"] or r.get("n_missing")
                                     for r in (n, x))
                if kind == "throughput":	# same size: time none / time X
                    row["value"] = n["median_s"] / x["median_s"]
                else:
                    row["value"] = x["median_s"] / n["median_s"]
                rows.append(row)
    return rows


def cost_markdown(guest, idx, delays):
    """The cost of protection table (and the sealing target), or []."""
    rows = cost_rows(idx, delays)
    if not rows:
        return []
    by = {(r["wl"], r["delay"], r["sec"]): r for r in rows}
    cols = [(d, sec) for d in delays for sec in ("auth", "seal", "chacha")
            if any(r["delay"] == d and r["sec"] == sec for r in rows)]
    L = ["#### Cost of protection: pohmelfs sec=auth and sec=seal against sec=none",
         "",
         "Same run, same workloads: sequential transfers as throughput in % "
         "of sec=none's (its median time / this one's; below 100% is slower), "
         "everything else as wall time × sec=none's (above 1 is slower). "
         "auth signs every message (integrity only), seal encrypts and signs "
         "it (AES-256-GCM; chacha: ChaCha20-Poly1305); none checks the key at "
         "connect only. Under TCG "
         "the guest's AES and carry-less multiply instructions are emulated "
         "too, so these costs need not be those of real hardware; the spread "
         "of each median is in the wall-time tables. † some repetitions of "
         "one of the two failed or did not run: medians of the others.", "",
         "| workload | measure | " + " | ".join(
             "%s, %s" % (sec, delay_short(d)) for d, sec in cols) + " |",
         "|---" * (len(cols) + 2) + "|"]
    for wl in WL_ORDER:
        cells = [by.get((wl, d, sec)) for d, sec in cols]
        if not any(cells):
            continue
        tp = wl in THROUGHPUT
        out = []
        for r in cells:
            if r is None:
                out.append("n/a")
            elif r["value"] is None:
                out.append(r["why"])
            elif tp:
                out.append("%.0f%%%s" % (r["value"] * 100, " †" if r["partial"] else ""))
            else:
                out.append("%.2f×%s" % (r["value"], " †" if r["partial"] else ""))
        L.append("| %s | %s | %s |" % (
            wl_label(wl, guest),
            "throughput, % of none" if tp else "time × none", " | ".join(out)))
    L.append("")
    L.append("Target: sealed sequential throughput at least %.0f%% of unsealed "
             "(sec=seal against sec=none, medians; not asserted):" % (SEAL_TARGET * 100))
    L.append("")
    L.append("| workload | " + " | ".join(delay_short(d) for d in delays) + " |")
    L.append("|---" * (len(delays) + 1) + "|")
    for wl in THROUGHPUT:
        out = []
        for d in delays:
            r = by.get((wl, d, "seal"))
            if r is None or r["value"] is None:
                out.append(r["why"] if r else "–")
            else:
                out.append("%.0f%% %s%s" % (
                    r["value"] * 100,
                    "met" if r["value"] >= SEAL_TARGET else "**not met**",
                    " †" if r["partial"] else ""))
        L.append("| %s | %s |" % (wl_label(wl, guest), " | ".join(out)))
    L.append("")
    return L


def protection_notes(prots):
    """What each pohmel-SEC mount had, from the BENCH-PROT lines."""
    seen = {}
    for p in prots:
        k = (p.get("fs", "?"), p.get("sec", "?"), p.get("protection", ""))
        e = seen.setdefault(k, {"n": 0, "mnts": set()})
        e["n"] += 1
        e["mnts"].add(p.get("mnt", "?"))
    if not seen:
        return []
    total = {}
    for (fs, _, _), e in seen.items():
        total[fs] = total.get(fs, 0) + e["n"]
    L = ["pohmelfs protection as measured (the `protection:` line of "
         "/proc/self/mountstats after each remount with `-o sec=…` through "
         "mount.pohmel, both mounts, every delay and repetition):", ""]
    order = lambda k: (FS_ORDER.index(k[0]) if k[0] in FS_ORDER else 99, k[2])
    for k in sorted(seen, key=order):
        fs, sec, prot = k
        e = seen[k]
        ok = prot.startswith(PROT_PREFIX.get(sec, "\0"))
        L.append("- %s: `%s` (%d of %d mounts: %s)%s" % (
            FS_LABEL.get(fs, fs), prot or "no protection line", e["n"],
            total[fs], ", ".join(sorted(e["mnts"])),
            "" if ok else " — **not what sec=%s asks for: not measured**" % sec))
    L.append("")
    return L


def markdown(guest, host, results, idx, delays, skips, pohmeld, prots=()):
    L = []
    g = guest
    L.append("Measured %s on %s (%s cores, %s GiB; host load %s before, %s after; 1-min load during the run mean/max/samples %s) in a "
             "QEMU TCG guest: Debian %s, %s vCPU, %s MiB. Server and clients in the "
             "same guest over loopback. Median of the repetitions that ran (%s "
             "planned; `n` in latest.json), ±half the min–max spread; lower is better. The tree: %s files (%.0f MB tar) "
             "of Linux headers as a git checkout."
             % (host.get("finished", "?"), host.get("host_cpu", "?"),
                host.get("host_cpus", "?"), host.get("host_mem_gb", "?"),
                host.get("load_before", "?"), host.get("load_after", "?"),
                host.get("load_during_mean_max_samples", "?"),
                g.get("kernel", "?"), g.get("vcpus", "?"), g.get("mem_mb", "?"),
                g.get("reps", "?"), g.get("files", "?"),
                (g.get("tree_bytes") or 0) / 1e6))
    L.append("")
    for d in delays:
        cols = columns(results, d)
        title = delay_title(d)
        L.append("#### Wall time, %s" % title)
        L.append("")
        L.append("| workload | " + " | ".join(FS_LABEL.get(c, c) for c in cols) + " |")
        L.append("|---" * (len(cols) + 1) + "|")
        for wl in WL_ORDER:
            if not any((d, c, wl) in idx or ("local", c, wl) in idx for c in cols):
                continue
            L.append("| %s | " % wl_label(wl, g) +
                     " | ".join(cell_time(idx, d, c, wl) for c in cols) + " |")
        L.append("")
        net = [c for c in cols if c not in LOCAL]
        measured = {r["fs"] for r in results}
        for key, what in (("ratio_ext4", "local ext4"), ("ratio_nfs4", "NFSv4.2")):
            if key[6:] not in measured:	# e.g. tests/bench/run --protection
                continue
            L.append("Ratio against %s (%s; below 1 is faster):" % (what, title))
            L.append("")
            L.append("| workload | " + " | ".join(FS_LABEL.get(c, c) for c in net) + " |")
            L.append("|---" * (len(net) + 1) + "|")
            for wl in WL_ORDER:
                if not any((d, c, wl) in idx for c in net):
                    continue
                L.append("| %s | " % wl_label(wl, g) +
                         " | ".join(cell_ratio(idx, d, c, wl, key) for c in net) + " |")
            L.append("")
        L.append("Network messages (pohmelfs: round trips from its counters in "
                 "/proc/self/mountstats; NFS: RPCs; SMB: requests) and server CPU "
                 "seconds (pohmeld; nfsd threads; smbd; diod), medians per run, %s:" % title)
        L.append("")
        L.append("| workload | " + " | ".join("%s msgs | %s CPU s" % (
            FS_LABEL.get(c, c), FS_LABEL.get(c, c)) for c in net) + " |")
        L.append("|---" * (2 * len(net) + 1) + "|")
        for wl in WL_ORDER:
            row = []
            for c in net:
                r = idx.get((d, c, wl))
                if r is None or not r["ok"]:
                    row += ["failed" if r else "n/a", ""]
                    continue
                m = r["msgs_median"]
                row.append("–" if m is None else "%d" % m)
                cpu = r["srv_cpu_median_s"]
                row.append("–" if cpu is None else "%.2f" % cpu)
            if any(x not in ("n/a", "") for x in row):
                L.append("| %s | " % wl_label(wl, g) + " | ".join(row) + " |")
        L.append("")
        # One pohmeld serves every pohmelfs column (in their order, so the
        # later ones include what the earlier ones left in its memory).
        rss = []
        for p in POHMEL:
            m = [r["srv_rss_kb_max"] for r in results
                 if r["delay"] == d and r["fs"] == p and r["srv_rss_kb_max"]]
            if m:
                rss.append("%.1f MiB%s" % (
                    max(m) / 1024, "" if p == "pohmel" else
                    " with sec=none, writeback=on" if p == "pohmel-wb" else
                    " with sec=" + p.split("-")[1]))
        if rss:
            L.append("pohmeld resident memory (%s): up to %s during the "
                     "workloads." % (title, ", ".join(rss)))
            L.append("")
    L += many_markdown()
    L += cost_markdown(guest, idx, delays)
    L += protection_notes(prots)
    if {"ext4", "nfs4"} & {r["fs"] for r in results}:
        L += targets(idx, delays)
    if pohmeld.get("vmhwm_kb"):
        L.append("pohmeld peak resident memory over the whole run (VmHWM): %.1f MiB."
                 % (pohmeld["vmhwm_kb"] / 1024))
        L.append("")
    seen = {}
    for s in skips:	# one note per filesystem and reason
        seen.setdefault((s["fs"], s["why"]), []).append(
            "%s ms rep %s" % (s["delay"], s.get("rep", "all")))
    for (fs, why), where in seen.items():
        L.append("- %s: not measured (%s): %s" % (
            FS_LABEL.get(fs, fs), ", ".join(where), why))
    short = sorted({(r["fs"], r["delay"]) for r in results if r.get("n_missing")})
    for fs, d in short:
        L.append("- %s (delay %s): some repetitions never reported (run cut short)"
                 % (FS_LABEL.get(fs, fs), d))
    failed = [r for r in results if r["n_failed"] and r["error"]
              and not r["error"].startswith(("skipped", "not run"))]
    for r in failed:
        L.append("- %s, %s, %s: failed: %s" % (
            FS_LABEL.get(r["fs"], r["fs"]), r["delay"], r["wl"], r["error"][:200]))
    return "\n".join(L).rstrip() + "\n"


# The targets for pohmelfs (reported, never asserted): workload,
# reference filesystem, the largest time ratio that meets it, wording.
TARGETS = [
    ("find", "nfs4", 0.1, "warm find -ls ≥10× faster than NFSv4.2"),
    ("find", "ext4", 1.5, "warm find -ls within 1.5× of ext4"),
    ("git_status", "nfs4", 0.1, "warm git status ≥10× faster than NFSv4.2"),
    ("git_status", "ext4", 1.5, "warm git status within 1.5× of ext4"),
    ("seq_write", "nfs4", 1 / 0.9, "sequential write ≥90% of NFSv4.2's throughput"),
    ("seq_read_cold", "nfs4", 1 / 0.9, "sequential cold read ≥90% of NFSv4.2's throughput"),
    ("seq_read_warm", "nfs4", 1 / 0.9, "sequential warm read ≥90% of NFSv4.2's throughput"),
    ("untar", "nfs4", 1.0, "untar no slower than NFSv4.2"),
    ("untar", "ext4", 2.0, "untar within 2× of ext4 (once metadata write-back exists)"),
]


def targets(idx, delays):
    """The issue's targets against this run's medians, per delay, for the
    sealed column (or the one pohmelfs column there is)."""
    present = {k[1] for k in idx}
    pfs = next((f for f in TARGET_FS if f in present), "pohmel")
    L = ["Issue targets for pohmelfs%s (not asserted; pohmelfs time / "
         "reference time, medians):" % (
             "" if pfs == "pohmel" else ", its sec=%s column" % pfs.split("-")[1]),
         "",
         "| target | " + " | ".join(
             ("%s ms" % d) if d != "0" else "no delay" for d in delays) + " |",
         "|---" * (len(delays) + 1) + "|"]
    for wl, ref, limit, what in TARGETS:
        row = []
        for d in delays:
            p = idx.get((d, pfs, wl))
            b = idx.get((d, ref, wl)) or idx.get(("local", ref, wl))
            if not p or not p["n_ok"] or not b or not b["n_ok"]:
                row.append("failed" if p and p["n_failed"] else "–")
                continue
            v = p["median_s"] / b["median_s"]
            row.append("%.2f× %s" % (v, "met" if v <= limit else "**not met**"))
        L.append("| %s | %s |" % (what, " | ".join(row)))
    L.append("")
    return L


def readme_section(guest, host, md_full, delays, cost=(), per_sec=False):
    """The README's Benchmarks section: the wall-time table of the first
    delay setting, the cost of protection, the machine, how to reproduce."""
    lines = md_full.splitlines()
    first = []
    on = False
    for ln in lines:
        if ln.startswith("#### Wall time"):
            if on:
                break
            on = True
        if on:
            if ln.startswith("Network messages"):
                break
            first.append(ln)
    intro = lines[0] if lines else ""
    return "\n".join([
        "## Benchmarks",
        "",
        "`make bench` (tests/bench/run; details in tests/bench/README.md) boots one "
        "QEMU guest and runs the same workloads over pohmelfs%s, NFSv3 (async "
        "export), NFSv4.2, SMB3 (Samba), 9p (diod), ext4 and tmpfs, over loopback "
        "with a LAN-like delay added by `tc netem` and without. Latest run:"
        % (" (mounted with sec=none, sec=auth and sec=seal in turn)" if per_sec else ""),
        "",
        intro,
        "",
    ] + ["#" + x if x.startswith("####") else x for x in first] + [
        "",
    ] + ["#" + x if x.startswith("####") else x for x in cost] + [
        "All delays, message counts, server CPU and memory: "
        "[tests/bench/results/latest.md](tests/bench/results/latest.md), "
        "[latest.json](tests/bench/results/latest.json), "
        "![chart](tests/bench/results/latest.png)",
        "",
        "Reproduce (root on a Debian 12 host with QEMU; ~%s): `make bench`, or "
        "`tests/bench/run BENCH_FILES=%s BENCH_REPS=%s BENCH_SEQ_MB=%s "
        "BENCH_DELAYS=\"%s\"`. Timings under TCG emulation on a shared machine "
        "compare filesystems within one run; they are not absolute figures."
        % ("see tests/bench/README.md", guest.get("files", "?"), guest.get("reps", "?"),
           guest.get("seq_mb", "?"), guest.get("delays", "?")),
        ""])


def chart(path, guest, results, idx, delays):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: no matplotlib; no PNG", file=sys.stderr)
        return False
    wls = [w for w in WL_ORDER if any(r["wl"] == w for r in results)]
    fig, axes = plt.subplots(len(delays), 1, figsize=(14, 4.8 * len(delays)),
                             squeeze=False)
    for ax, d in zip(axes[:, 0], delays):
        cols = columns(results, d)
        width = 0.8 / max(1, len(cols))
        for i, c in enumerate(cols):
            xs, ys, lo, hi, fx = [], [], [], [], []
            for j, wl in enumerate(wls):
                r = idx.get((d, c, wl)) or idx.get(("local", c, wl))
                x = j + (i - (len(cols) - 1) / 2) * width
                if r and r["n_ok"]:
                    xs.append(x)
                    ys.append(r["median_s"])
                    lo.append(r["median_s"] - r["min_s"])
                    hi.append(r["max_s"] - r["median_s"])
                elif r:
                    fx.append(x)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2,
                   label=FS_LABEL.get(c, c))
            for x in fx:
                ax.text(x, 0.01, "failed", rotation=90, fontsize=6,
                        ha="center", va="bottom",
                        transform=ax.get_xaxis_transform())
        ax.set_yscale("log")
        ax.set_ylabel("seconds (log), lower is better")
        ax.set_xticks(range(len(wls)))
        ax.set_xticklabels([wl_label(w, guest) for w in wls], rotation=25,
                           ha="right", fontsize=7)
        ax.set_title("%s" % (("%s ms round trip added on lo" % d) if d != "0"
                              else "no added delay"))
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=len(cols))
    done = max([r["n_ok"] for r in results] or [0])
    fig.suptitle("POHMELFS bench: one QEMU TCG guest, %s, median of up to %s "
                 "run(s) (%s planned)" % (guest.get("kernel", "?"), done,
                                          guest.get("reps", "?")))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--host")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    host = {}
    if a.host and os.path.exists(a.host):
        with open(a.host) as f:
            host = json.load(f)
    guest, runs, skips, pohmeld, prots = parse(a.log)
    if not runs and not skips:
        print("report: no BENCH lines in %s" % a.log, file=sys.stderr)
        return 1
    results, idx, delays = aggregate(guest, runs, skips)
    os.makedirs(a.out, exist_ok=True)
    md = markdown(guest, host, results, idx, delays, skips, pohmeld, prots)
    cost = cost_markdown(guest, idx, delays)
    with open(os.path.join(a.out, "latest.md"), "w") as f:
        f.write(md)
    doc = {"host": host, "guest": guest, "pohmeld": pohmeld, "skipped": skips,
           "protection": prots, "protection_cost": cost_rows(idx, delays),
           "delays_ms": delays, "log": os.path.basename(a.log), "results": results}
    with open(os.path.join(a.out, "latest.json"), "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(a.out, "README-section.md"), "w") as f:
        f.write(readme_section(guest, host, md, delays, cost,
                               any(r["fs"] in POHMEL[1:] for r in results)))
    chart(os.path.join(a.out, "latest.png"), guest, results, idx, delays)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
