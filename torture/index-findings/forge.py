#!/usr/bin/env python3
"""Forged session indexes (valid CRC-32C, mutated body): no panic, no hang,
and a 'snap log' that succeeds. usage: forge.py SNAP PROJECT N"""
import os, random, subprocess, sys, glob, shutil
SNAP, SRC, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
T = [0] * 256
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T[i] = c
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
rng = random.Random(7)
wd = "/tmp/forge-wd"
bad = 0
files = sorted(glob.glob(os.path.join(SRC, ".snap/cache/sessions/*")))
assert files
for i in range(N):
    shutil.rmtree(wd, ignore_errors=True)
    shutil.copytree(SRC, wd, symlinks=True)
    f = rng.choice(files).replace(SRC, wd)
    b = bytearray(open(f, "rb").read())[:-4]
    assert crc32c(b) == int.from_bytes(open(f, "rb").read()[-4:], "big")
    for _ in range(rng.randint(1, 4)):
        k = rng.random()
        at = rng.randrange(8, len(b))
        if k < 0.6:
            b[at] = rng.randrange(256)
        elif k < 0.8:
            del b[at:at + rng.randint(1, 40)]
        else:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    open(f, "wb").write(bytes(b) + crc32c(b).to_bytes(4, "big"))
    sess = None
    try:
        r = subprocess.run([SNAP, "log", "--all", "--json"], cwd=wd, capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, SNAP_NO_AUTO_GC="1"))
        r2 = subprocess.run([SNAP, "sessions"], cwd=wd, capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, SNAP_NO_AUTO_GC="1"))
        if "panic" in r.stderr or "panic" in r2.stderr or r.returncode == 2 or r2.returncode == 2:
            bad += 1
            print("PANIC/usage", i, r.returncode, r.stderr[:300], r2.stderr[:300])
    except subprocess.TimeoutExpired:
        bad += 1
        print("HANG", i)
print(N, "forgeries,", bad, "bad")
sys.exit(1 if bad else 0)
