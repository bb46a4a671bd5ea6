#!/usr/bin/env python3
"""Read and write SNAPSIX2 session-index files (sessionindex.go, a67e373).

parse(bytes) -> dict; build(dict) -> bytes (with a correct CRC-32C).
"""
import struct

_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _uvarint(b, i):
    x = s = 0
    while True:
        v = b[i]; i += 1
        x |= (v & 0x7F) << s; s += 7
        if v < 0x80:
            return x, i


def _varint(b, i):
    u, i = _uvarint(b, i)
    return (u >> 1) ^ -(u & 1), i


def _put_uvarint(x):
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80); x >>= 7
    out.append(x)
    return bytes(out)


def _put_varint(x):
    return _put_uvarint((x << 1) ^ (x >> 63) if x >= 0 else ((-x - 1) << 1) | 1)


def parse(data):
    assert data[:8] == b"SNAPSIX2", data[:8]
    i = 8
    ln, i = _uvarint(data, i)
    session = data[i:i + ln]; i += ln
    off, i = _varint(data, i)
    seq, i = _varint(data, i)
    prefix, = struct.unpack(">I", data[i:i + 4]); i += 4
    n, h, m, strs = struct.unpack(">IIII", data[i:i + 16]); i += 16
    entries = [(data[i + k * 40:i + k * 40 + 32], struct.unpack(">q", data[i + k * 40 + 32:i + k * 40 + 40])[0]) for k in range(n)]
    i += n * 40
    byid = [struct.unpack(">I", data[i + 4 * k:i + 4 * k + 4])[0] for k in range(n)]; i += 4 * n
    heads = [data[i + 32 * k:i + 32 * k + 32] for k in range(h)]; i += 32 * h
    msgs = []
    for k in range(m):
        b = data[i + 48 * k:i + 48 * k + 48]
        msgs.append([b[:32], struct.unpack(">q", b[32:40])[0], struct.unpack(">I", b[40:44])[0], struct.unpack(">I", b[44:48])[0]])
    i += 48 * m
    strings = data[i:i + strs]; i += strs
    return dict(session=session, off=off, seq=seq, prefix=prefix, counts=[n, h, m, strs], entries=entries, byid=byid,
                heads=heads, msgs=msgs, strings=strings, rest=data[i:-4])


def build(d, counts=None, crc=True):
    b = bytearray(b"SNAPSIX2")
    b += _put_uvarint(len(d["session"])) + d["session"]
    b += _put_varint(d["off"]) + _put_varint(d["seq"]) + struct.pack(">I", d["prefix"])
    c = counts or [len(d["entries"]), len(d["heads"]), len(d["msgs"]), len(d["strings"])]
    b += struct.pack(">IIII", *c)
    for id_, t in d["entries"]:
        b += id_ + struct.pack(">q", t)
    for p in d["byid"]:
        b += struct.pack(">I", p)
    for x in d["heads"]:
        b += x
    for id_, t, o, l in d["msgs"]:
        b += id_ + struct.pack(">qII", t, o, l)
    b += d["strings"]
    b += struct.pack(">I", crc32c(bytes(b)) if crc else 0)
    return bytes(b)


if __name__ == "__main__":
    import sys
    d = parse(open(sys.argv[1], "rb").read())
    print({k: (v if k not in ("entries", "heads", "msgs") else len(v)) for k, v in d.items()})
