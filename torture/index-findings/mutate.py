#!/usr/bin/env python3
"""Op-log mutations against a store whose session indexes were written
before the mutation. For each mutation of .snap/oplog (truncation at a
record boundary or mid-record, a flipped byte, a deleted, duplicated or
swapped record line, garbage appended, the log of another store), the new
binary's reads (index files from before the mutation) are compared with
the old binary's reads of a byte copy (and with the new binary's on a copy
without cache/sessions). A difference is printed with where the mutation
lies relative to the indexes' marks.

usage: mutate.py NEW OLD SRC_PROJECT [N] [SEED] [OTHER_PROJECT]
"""
import glob, json, os, random, shutil, struct, subprocess, sys

NEW, OLD, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 60
rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
OTHER = sys.argv[6] if len(sys.argv) > 6 else None
WD = "/tmp/mutate-wd"
ENV = dict(os.environ, SNAP_NO_AUTO_GC="1", SNAP_LOCK_TIMEOUT="5s")


def run(b, args, cwd):
    r = subprocess.run([b] + args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def reads(b, cwd):
    res = {}
    rc, out, err = run(b, ["sessions", "--json"], cwd)
    res["sessions"] = (rc, out)
    names = set()
    try:
        names = {x["name"] for x in json.loads(out)["sessions"]}
    except Exception:
        pass
    rc, out, err = run(b, ["log", "--json", "--all"], cwd)
    res["log --all"] = (rc, out if rc == 0 else err[:100])
    msgs = set()
    for s in sorted(names):
        rc, out, err = run(b, ["log", "--json", "-s", s], cwd)
        res[f"log -s {s}"] = (rc, out if rc == 0 else err[:100])
        n = 0
        try:
            cks = json.loads(out).get("checkpoints", [])
            n = max([c["seq"] for c in cks] or [0])
            msgs |= {c.get("message_id") for c in cks if c.get("message_id")}
        except Exception:
            pass
        for i in range(1, n + 1):
            rc, out, err = run(b, ["show", "--json", "-s", s, f"#{i}"], cwd)
            res[f"show -s {s} #{i}"] = (rc, out if rc == 0 else err[:100])
    for s in sorted(names):
        for m in sorted(msgs):
            rc, out, err = run(b, ["show", "--json", "-s", s, f"msg:{m}"], cwd)
            try:
                out = json.loads(out)["id"]
            except Exception:
                out = ""
            res[f"show -s {s} msg:{m}"] = (rc, out)
    return res


def marks(p):
    """The marks of the index files (offset of the end of the marked record)."""
    out = []
    for f in glob.glob(os.path.join(p, ".snap/cache/sessions/*")):
        try:
            b = open(f, "rb").read()
        except OSError:
            continue
        if not b.startswith(b"SNAPSIX1"):
            continue
        i = 8

        def uv():
            nonlocal i
            v = s = 0
            while True:
                c = b[i]; i += 1
                v |= (c & 0x7F) << s; s += 7
                if c < 0x80:
                    return v
        l = uv(); name = b[i:i + l]; i += l
        off = uv(); off = (off >> 1) ^ -(off & 1)
        out.append((name.decode(), off))
    return out


def mutations(log, other):
    lines = log.split(b"\n")[:-1]
    bounds = [0]
    for l in lines:
        bounds.append(bounds[-1] + len(l) + 1)
    ms = []
    for _ in range(N):
        k = rng.randint(0, 8)
        if k == 0:
            cut = rng.choice(bounds[:-1])
            ms.append((f"truncate at record boundary {cut}", log[:cut], cut))
        elif k == 1:
            cut = rng.randint(0, len(log) - 1)
            ms.append((f"truncate mid-record at {cut}", log[:cut], cut))
        elif k == 2:
            at = rng.randint(0, len(log) - 2)
            b = bytearray(log); b[at] ^= 1 << rng.randint(0, 6)
            if b[at] == 10 or log[at] == 10:
                continue
            ms.append((f"flip a byte at {at}", bytes(b), at))
        elif k == 3:
            i = rng.randrange(len(lines))
            ms.append((f"delete record {i + 1}", b"".join(l + b"\n" for j, l in enumerate(lines) if j != i), bounds[i]))
        elif k == 4:
            i = rng.randrange(len(lines))
            ms.append((f"duplicate record {i + 1}", b"".join(l + b"\n" for l in lines[:i + 1] + lines[i:]), bounds[i + 1]))
        elif k == 5 and len(lines) > 2:
            i = rng.randrange(len(lines) - 1)
            ls = list(lines); ls[i], ls[i + 1] = ls[i + 1], ls[i]
            ms.append((f"swap records {i + 1},{i + 2}", b"".join(l + b"\n" for l in ls), bounds[i]))
        elif k == 6:
            g = bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 80)))
            if rng.random() < 0.5:
                g += b"\n"
            ms.append(("append garbage", log + g, len(log)))
        elif k == 7 and other:
            ms.append(("another store's log", other, 0))
        elif k == 8:
            # restore an older copy, then append records of the later history
            # (as if a backup was restored and work went on): here the last
            # records again, re-stamped would need the binary; approximate by
            # an older copy plus another store's tail.
            cut = rng.choice(bounds[:-1])
            tail = other[len(other) // 2:] if other else b""
            ms.append((f"older copy ({cut}) + foreign tail", log[:cut] + tail[tail.find(b'\n') + 1:], cut))
    return ms


def main():
    shutil.rmtree(WD, ignore_errors=True)
    os.makedirs(WD)
    base = os.path.join(WD, "base")
    shutil.copytree(SRC, base, symlinks=True)
    # make sure every session's index exists and is current
    reads(NEW, base)
    log = open(os.path.join(base, ".snap/oplog"), "rb").read()
    other = open(os.path.join(OTHER, ".snap/oplog"), "rb").read() if OTHER else None
    mk = marks(base)
    print("index marks:", [(s[:12], o) for s, o in mk], "log", len(log))
    bad = 0
    for desc, data, where in mutations(log, other):
        a = os.path.join(WD, "a"); o = os.path.join(WD, "o"); f = os.path.join(WD, "f")
        for d in (a, o, f):
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d, symlinks=True)
            open(os.path.join(d, ".snap/oplog"), "wb").write(data)
        for d in (o, f):
            shutil.rmtree(os.path.join(d, ".snap/cache/sessions"), ignore_errors=True)
        rn, ro, rf = reads(NEW, a), reads(OLD, o), reads(NEW, f)
        dn = [k for k in sorted(set(rn) | set(ro)) if rn.get(k) != ro.get(k)]
        df = [k for k in sorted(set(rf) | set(ro)) if rf.get(k) != ro.get(k)]
        before = [s[:8] for s, off in mk if where < off]
        print(("DIFF " if dn or df else "ok   ") + desc, f"(before the marks of {before})" if before else "(after every mark)")
        if dn or df:
            bad += 1
            for k in (dn or df)[:3]:
                print("   ", "with index" if dn else "fresh", k)
                print("      new:", str((rn if dn else rf).get(k))[:300])
                print("      old:", str(ro.get(k))[:300])
            keep = os.path.join(WD, f"case-{bad}")
            shutil.copytree(a, keep, symlinks=True)
    sys.exit(1 if bad else 0)


main()
