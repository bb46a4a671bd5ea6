#!/usr/bin/env python3
"""Twin-binary differential test of snap's session index (commit 62aaa30).

One project P is driven by random write commands (each run with the new or
the old binary at random, so the store is mixed-version too). After every
step the new binary's read commands run on P itself (so its index files
accumulate as in real use) and the old binary's on a byte copy of P taken
just before (cache/sessions removed: the old engine ignores it anyway).
Optionally also the new binary on a copy without cache/sessions (a rebuild
from the whole log). Any difference in the read outputs is reported.

usage: difftest.py NEW OLD SEED STEPS [WORKDIR]
"""
import json, os, random, shutil, subprocess, sys

NEW, OLD, SEED, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
WD = sys.argv[5] if len(sys.argv) > 5 else f"/tmp/difftest-{SEED}"
rng = random.Random(SEED)
shutil.rmtree(WD, ignore_errors=True)
os.makedirs(WD)
P = os.path.join(WD, "p")
os.makedirs(P)
ENV = dict(os.environ, SNAP_NO_AUTO_GC="1", SNAP_LOCK_TIMEOUT="5s")
PEER = os.path.join(WD, "peer")
REMOTE = os.path.join(WD, "remote.git")
TRANSCRIPT = os.path.join(WD, "transcript.jsonl")

SESSIONS = ["default", "agent", "Agent", "b" * 128, "x.y-z_1", "peer", "hook-1"]
MSGS = [f"msg_{i}" for i in range(8)]
FILES = ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt"]


def run(binary, args, cwd, check=False):
    r = subprocess.run([binary] + args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        print("FAILED", args, r.stdout, r.stderr)
    return r.returncode, r.stdout, r.stderr


def seqs(binary, cwd, s):
    rc, out, _ = run(binary, ["log", "--json", "-s", s], cwd)
    if rc != 0:
        return 0
    try:
        return max([c["seq"] for c in json.loads(out).get("checkpoints", [])] or [0])
    except Exception:
        return 0


def mutate_files():
    for _ in range(rng.randint(0, 2)):
        f = os.path.join(P, rng.choice(FILES))
        if rng.random() < 0.2 and os.path.exists(f):
            os.remove(f)
        else:
            os.makedirs(os.path.dirname(f), exist_ok=True)
            with open(f, "w") as fh:
                fh.write(f"{rng.randint(0, 5)}\n" * rng.randint(1, 4))


def random_step(step):
    b = NEW if rng.random() < 0.6 else OLD
    s = rng.choice(SESSIONS)
    r = rng.random()
    n = seqs(NEW, P, s)
    if r < 0.45:
        mutate_files()
        args = ["checkpoint", "-s", s]
        if rng.random() < 0.7:
            args += ["-m", rng.choice(MSGS)]
        if rng.random() < 0.1:
            args += ["--allow-empty"]
        if rng.random() < 0.05:
            args += ["--label", f"L{rng.randint(0, 3)}"]
        if rng.random() < 0.3:
            args += ["--kind", rng.choice(["pre-tool", "post-tool", "manual"])]
        if rng.random() < 0.3:
            args += ["--actor", rng.choice(["user", "agent"])]
    elif r < 0.60 and n > 0:
        ref = f"#{rng.randint(1, n)}" if rng.random() < 0.7 else f"msg:{rng.choice(MSGS)}"
        if rng.random() < 0.3:
            mutate_files()
        args = ["rewind", "-s", s, ref] + (["--all"] if rng.random() < 0.5 else [])
    elif r < 0.70:
        args = ["undo", "-s", s]
    elif r < 0.76:
        args = ["redo", "-s", s]
    elif r < 0.80 and n > 0:
        args = ["label", "-s", s, f"#{rng.randint(1, n)}", f"L{rng.randint(0, 3)}"]
    elif r < 0.83:
        args = ["session", rng.choice(["archive", "rm"]), rng.choice(SESSIONS)]
    elif r < 0.86:
        args = ["gc", "--keep-last", str(rng.randint(1, 4)), "--keep-within", "0s", "--grace", "0s"]
    elif r < 0.90 and n > 0:
        args = ["revert", "-s", s, f"#{rng.randint(1, n)}"]
    elif r < 0.905:
        # the peer works and pushes; P pulls (an import: checkpoints listed at
        # their own, older, times)
        ps = rng.choice(["peer", "agent", "default"])
        for _ in range(rng.randint(1, 3)):
            with open(os.path.join(PEER, "p.txt"), "a") as fh:
                fh.write(f"{rng.random()}\n")
            run(NEW, ["checkpoint", "-s", ps, "-m", rng.choice(MSGS)], PEER)
        run(NEW, ["push", REMOTE, "-s", ps], PEER)
        args = ["pull", REMOTE, "-s", ps]
    elif r < 0.915:
        # P pushes, the peer pulls (its own later pulls of P then conflict or not)
        run(b, ["push", REMOTE, "-s", s], P)
        rc, out, err = run(NEW, ["pull", REMOTE, "-s", s], PEER)
        args = ["pull", REMOTE, "-s", rng.choice(["peer", "agent", "default"])]
    elif r < 0.93:
        with open(TRANSCRIPT, "a") as fh:
            fh.write(json.dumps({"role": "user", "content": str(rng.random())}) + "\n")
        ev = rng.choice(["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionStart"])
        if ev in ("PreToolUse", "PostToolUse"):
            mutate_files()
        payload = {"session_id": rng.choice(["agent", "hook-1", "Hook/2", "default"]), "transcript_path": TRANSCRIPT,
                   "cwd": P, "hook_event_name": ev, "prompt": "do it", "tool_name": rng.choice(["Edit", "Bash"]),
                   "tool_use_id": rng.choice(MSGS), "tool_input": {"file_path": os.path.join(P, rng.choice(FILES))}}
        r2 = subprocess.run([b, "hook", "claude-code"], cwd=P, env=ENV, input=json.dumps(payload), capture_output=True, text=True, timeout=60)
        return ("hook", ev, payload["session_id"], r2.returncode, r2.stderr.strip()[:200])
    elif r < 0.95:
        # a task
        args = ["task", rng.choice(["begin", "commit", "revert"]), "-s", s, "t"]
    else:
        mutate_files()
        args = ["checkpoint", "-s", s, "-m", rng.choice(MSGS), "--paths", rng.choice(FILES), "--kind", "pre-tool"]
    if WRITEDIFF and args[0] not in ("pull",):
        w = os.path.join(WD, "w")
        shutil.rmtree(w, ignore_errors=True)
        shutil.copytree(P, w, symlinks=True)
        other = OLD if b == NEW else NEW
        rc2, out2, err2 = run(other, args, w)
    rc, out, err = run(b, args, P)
    if WRITEDIFF and args[0] not in ("pull",):
        a1 = (rc, norm(out), norm(err), tree(P), shape(NEW, P))
        a2 = (rc2, norm(out2), norm(err2), tree(w), shape(NEW, w))
        if a1 != a2:
            print("WRITE-DIFF", args)
            for x, y, what in zip(a1, a2, ["rc", "stdout", "stderr", "tree", "log shape"]):
                if x != y:
                    print("   ", what, "\n      ", b, str(x)[:700], "\n      ", other, str(y)[:700])
    return (os.path.basename(os.path.dirname(b)) or b, args, rc, err.strip()[:200])


import re, hashlib
WRITEDIFF = os.environ.get("WRITEDIFF") == "1"


def norm(t):
    t = re.sub(r"[0-9a-f]{12,64}", "ID", t)
    t = re.sub(r"\d{4}-\d\d-\d\dT?[ \d:.]*Z?", "TIME", t)
    return re.sub(r"/tmp/difftest-\d+/(p|w)", "DIR", t)


def tree(d):
    out = {}
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x not in (".snap", ".git")]
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = hashlib.sha1(open(p, "rb").read()).hexdigest() if not os.path.islink(p) else "link"
    return out


def shape(binary, cwd):
    rc, out, err = run(binary, ["log", "--json", "--all"], cwd)
    try:
        return [(c["session"], c["seq"], c["kind"], c.get("message_id"), c.get("summary"), c["head"], c["abandoned"],
                 c["stats"]["added"], c["stats"]["modified"], c["stats"]["deleted"]) for c in json.loads(out)["checkpoints"]]
    except Exception:
        return (rc, err)


def reads(binary, cwd):
    """The read commands' outputs, keyed."""
    res = {}
    rc, out, err = run(binary, ["sessions", "--json"], cwd)
    res["sessions"] = (rc, out)
    names = set(SESSIONS)
    try:
        names |= {x["name"] for x in json.loads(out)["sessions"]}
    except Exception:
        pass
    rc, out, err = run(binary, ["log", "--json", "--all"], cwd)
    res["log --all"] = (rc, out)
    for s in sorted(names):
        rc, out, err = run(binary, ["log", "--json", "-s", s], cwd)
        res[f"log -s {s}"] = (rc, out)
        n = 0
        try:
            n = max([c["seq"] for c in json.loads(out).get("checkpoints", [])] or [0])
        except Exception:
            pass
        for i in range(1, n + 2):
            rc, out, err = run(binary, ["show", "--json", "-s", s, f"#{i}"], cwd)
            res[f"show -s {s} #{i}"] = (rc, out if rc == 0 else err[:120])
        for m in MSGS:
            rc, out, err = run(binary, ["show", "--json", "-s", s, f"msg:{m}"], cwd)
            try:
                out = json.loads(out)["id"] + " seq=" + str(json.loads(out)["seq"])
            except Exception:
                out = ""
            res[f"show -s {s} msg:{m}"] = (rc, out)
    return res


def main():
    run(NEW, ["init"], P, check=True)
    subprocess.run(["git", "init", "-q", "--bare", REMOTE], check=True)
    os.makedirs(PEER)
    subprocess.run(["git", "init", "-q", PEER], check=True)
    subprocess.run(["git", "init", "-q", P], check=True)
    run(NEW, ["init"], PEER, check=True)
    bad = 0
    for step in range(STEPS):
        what = random_step(step)
        q = os.path.join(WD, "q")
        shutil.rmtree(q, ignore_errors=True)
        shutil.copytree(P, q, symlinks=True)
        shutil.rmtree(os.path.join(q, ".snap", "cache", "sessions"), ignore_errors=True)
        q2 = os.path.join(WD, "q2")
        shutil.rmtree(q2, ignore_errors=True)
        shutil.copytree(q, q2, symlinks=True)
        rn = reads(NEW, P)
        ro = reads(OLD, q)
        rn2 = reads(NEW, q2) if step % 5 == 0 else None
        diffs = [k for k in sorted(set(rn) | set(ro)) if rn.get(k) != ro.get(k)]
        if rn2 is not None:
            diffs += ["(fresh) " + k for k in sorted(set(rn2) | set(ro)) if rn2.get(k) != ro.get(k)]
        print(step, what, "DIFF" if diffs else "ok", flush=True)
        if diffs:
            bad += 1
            for k in diffs[:5]:
                print("  ", k)
                print("     new:", str(rn.get(k))[:600])
                print("     old:", str(ro.get(k))[:600])
            keep = os.path.join(WD, f"diff-{step}")
            shutil.copytree(q, keep, symlinks=True)
            if bad >= 3:
                sys.exit(1)
    sys.exit(1 if bad else 0)


main()
