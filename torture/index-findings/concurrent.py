#!/usr/bin/env python3
"""Writers checkpoint in tight loops (two sessions, one process each) while
readers run log/show '#N'/show msg:ID/sessions in loops, some of them
deleting or corrupting the index files as they go. Every answer must agree
with the final history: log lists a prefix of the session's final list,
'#N' is the final list's N-th, msg:ID the checkpoint made with that id
(every checkpoint gets a unique message id here), sessions counts <= final.

usage: concurrent.py SNAP SECONDS [WORKDIR]
"""
import json, os, random, shutil, subprocess, sys, threading, time, glob

SNAP, SECS = sys.argv[1], float(sys.argv[2])
WD = sys.argv[3] if len(sys.argv) > 3 else "/tmp/concurrent-idx"
# NONLINEAR=1: the writers also rewind and undo (abandoned checkpoints,
# safety checkpoints); then only the lists of ids and '#N' are checked.
NONLINEAR = os.environ.get("NONLINEAR") == "1"
shutil.rmtree(WD, ignore_errors=True)
os.makedirs(WD)
ENV = dict(os.environ, SNAP_NO_AUTO_GC="1", SNAP_LOCK_TIMEOUT="60s")
SESS = ["s1", "s2"]
stop = time.time() + SECS
answers = []  # (kind, session, payload)
lock = threading.Lock()
errors = []


def run(args, timeout=60):
    return subprocess.run([SNAP] + args, cwd=WD, env=ENV, capture_output=True, text=True, timeout=timeout)


run(["init"])
made = {s: [] for s in SESS}


def writer(s):
    i = 0
    wr = random.Random(s)
    while time.time() < stop:
        i += 1
        if NONLINEAR and made[s] and wr.random() < 0.3:
            if wr.random() < 0.5:
                r = run(["rewind", "-s", s, "--all", f"msg:{wr.choice(made[s])[0]}"])
            else:
                r = run(["undo", "-s", s, "--all"])
            if r.returncode not in (0, 1, 3):
                errors.append(("writer move", s, r.returncode, r.stderr))
            continue
        with open(os.path.join(WD, f"{s}.txt"), "w") as f:
            f.write(f"{s} {i}\n")
        r = run(["checkpoint", "-s", s, "-m", f"{s}-m{i}", "--paths", f"{s}.txt"])
        if r.returncode != 0:
            errors.append(("writer", s, r.stderr))
            continue
        made[s].append((f"{s}-m{i}", r.stdout.split()[0]))


def reader(k):
    rng = random.Random(k)
    while time.time() < stop:
        s = rng.choice(SESS)
        what = rng.random()
        if k == 0 and rng.random() < 0.3:
            # vandal: remove or corrupt index files now and then
            for f in glob.glob(os.path.join(WD, ".snap/cache/sessions/*")):
                try:
                    if rng.random() < 0.5:
                        os.remove(f)
                    else:
                        with open(f, "r+b") as fh:
                            fh.seek(rng.randint(0, max(0, os.path.getsize(f) - 1)))
                            fh.write(bytes([rng.randint(0, 255)]))
                except OSError:
                    pass
        if what < 0.4:
            r = run(["log", "--json", "-s", s])
            if r.returncode == 0:
                cks = json.loads(r.stdout).get("checkpoints", [])
                with lock:
                    answers.append(("log", s, [(c["seq"], c["id"], c.get("message_id"), c["head"], c["abandoned"]) for c in cks]))
            else:
                errors.append(("log", s, r.stderr))
        elif what < 0.7:
            n = rng.randint(1, max(1, len(made[s]) + 2))
            r = run(["show", "--json", "-s", s, f"#{n}"])
            if r.returncode == 0:
                d = json.loads(r.stdout)
                with lock:
                    answers.append(("show", s, (n, d["id"], d["seq"])))
            elif r.returncode != 4:
                errors.append(("show", s, r.stderr))
        elif what < 0.9:
            if made[s]:
                m, id_ = rng.choice(made[s])
                r = run(["show", "--json", "-s", s, f"msg:{m}"])
                if r.returncode == 0:
                    d = json.loads(r.stdout)
                    with lock:
                        answers.append(("msg", s, (m, d["id"], d["seq"])))
                else:
                    errors.append(("msg", s, m, r.returncode, r.stderr))
        else:
            r = run(["sessions", "--json"])
            if r.returncode == 0:
                with lock:
                    answers.append(("sessions", None, {x["name"]: x["checkpoints"] for x in json.loads(r.stdout)["sessions"]}))
            else:
                errors.append(("sessions", r.stderr))


ts = [threading.Thread(target=writer, args=(s,)) for s in SESS] + [threading.Thread(target=reader, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()

final = {}
for s in SESS:
    r = run(["log", "--json", "-s", s])
    final[s] = [c["id"] for c in reversed(json.loads(r.stdout)["checkpoints"])]
    if not NONLINEAR:
        assert final[s] == [x[1] for x in made[s]], ("final log differs from what was made", s)
bad = list(errors)
for kind, s, p in answers:
    if kind == "log":
        ids = [x[1] for x in sorted(p)]
        seqs = sorted(x[0] for x in p)
        if ids != final[s][:len(ids)] or seqs != list(range(1, len(ids) + 1)):
            bad.append(("log not a prefix", s, p[:3]))
        heads = [x for x in p if x[3]]
        # (no entry marked head: the head moved between the list and the
        # head read; the old engine does that too, so not counted here)
        if NONLINEAR:
            continue
        if p and heads and (len(heads) != 1 or heads[0][0] != len(p)):
            bad.append(("log head not the newest", s, heads))
        if any(x[4] for x in p):
            bad.append(("abandoned in a linear history", s, [x for x in p if x[4]][:3]))
    elif kind == "show":
        n, id_, seq = p
        if n > len(final[s]) or final[s][n - 1] != id_ or seq != n:
            bad.append(("show #N wrong", s, p))
    elif kind == "msg":
        m, id_, seq = p
        want = dict(made[s])[m]
        if (id_ != want and not NONLINEAR) or final[s][seq - 1] != id_:
            bad.append(("msg wrong", s, p))
    elif kind == "sessions":
        for name, n in p.items():
            if n > len(final[name]):
                bad.append(("sessions count too high", name, n))
print(f"{len(answers)} answers, {sum(len(v) for v in final.values())} checkpoints, {len(bad)} bad")
for b in bad[:20]:
    print("BAD", b)
sys.exit(1 if bad else 0)
