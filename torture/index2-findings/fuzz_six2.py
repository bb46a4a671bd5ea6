import sys, os, random, subprocess, shutil, glob
# usage: fuzz_six2.py SEED BASE_PROJECT ITERATIONS  (BASE_PROJECT: a project whose
# .snap/cache/sessions holds one SNAPSIX2 file; work copies go to /tmp/idx2/fzSEED)
sys.path.insert(0, '/work/main/torture/index2-findings'); import six2
NEW = '/work/main/bin/snap'
rng = random.Random(int(sys.argv[1]))
BASE = sys.argv[2]
ENV = dict(os.environ, SNAP_NO_AUTO_GC='1')
W = f'/tmp/idx2/fz{sys.argv[1]}'
p0 = glob.glob(BASE + '/.snap/cache/sessions/*')[0]
orig = open(p0, 'rb').read()
for it in range(int(sys.argv[3])):
    shutil.rmtree(W, ignore_errors=True); shutil.copytree(BASE, W, symlinks=True)
    p = glob.glob(W + '/.snap/cache/sessions/*')[0]
    d = six2.parse(orig)
    kind = rng.randrange(8)
    counts = None
    if kind == 0:
        d['byid'] = [rng.choice([rng.randrange(2**32), rng.randrange(len(d['entries']) + 2)]) for _ in d['byid']]
    elif kind == 1 and d['msgs']:
        for m in d['msgs']:
            m[2] = rng.choice([rng.randrange(2**32), rng.randrange(len(d['strings']) + 3)])
            m[3] = rng.choice([rng.randrange(2**32), rng.randrange(len(d['strings']) + 3)])
    elif kind == 2:
        rng.shuffle(d['entries'])
    elif kind == 3:
        rng.shuffle(d['heads']); d['heads'] = d['heads'][:rng.randrange(len(d['heads']) + 1)]
    elif kind == 4:
        d['off'] = rng.choice([0, -1, 2**62, d['off'] - 1, d['off'] + 1, -2**63])
        d['seq'] = rng.choice([d['seq'], -1, 0, 2**62])
    elif kind == 5:
        # drop or duplicate entries with byid left as is
        if rng.random() < 0.5 and d['entries']:
            d['entries'].append(rng.choice(d['entries'])); d['byid'].append(rng.randrange(len(d['entries'])))
        else:
            d['entries'] = d['entries'][:-1]; d['byid'] = [x for x in d['byid'] if x < len(d['entries'])]
    elif kind == 6:
        d['entries'] = [(e[0], rng.choice([e[1], -e[1], 0, 2**63 - 1, -2**63])) for e in d['entries']]
    else:
        d['msgs'] = [[m[0], rng.choice([m[1], -1]), m[2], m[3]] for m in d['msgs']]
        rng.shuffle(d['msgs'])
    b = bytearray(six2.build(d))
    if rng.random() < 0.2:
        # raw byte flip, keep crc
        i = rng.randrange(8, len(b) - 4); b[i] ^= 1 << rng.randrange(8)
        b = b[:-4] + six2.crc32c(bytes(b[:-4])).to_bytes(4, 'big')
    open(p, 'wb').write(b)
    for args in (['log'], ['log', '--all'], ['show', '#1'], ['show', '#3'], ['show', 'msg:q1'], ['sessions'], ['show', 'HEAD'], ['blame', 'a1'], ['checkpoint', '--allow-empty', '-m', 'x'], ['log']):
        r = subprocess.run([NEW] + args, cwd=W, env=ENV, capture_output=True, text=True, timeout=30)
        if 'internal error' in r.stderr or 'panic' in r.stderr or 'goroutine' in r.stderr:
            print('PANIC', it, kind, args, r.stderr[:800]); open(f'/tmp/idx2/fzpanic{sys.argv[1]}_{it}', 'wb').write(bytes(b)); break
    else:
        continue
print('done')
