#!/usr/bin/env python3
"""Packs a safetensors checkpoint small enough to carry to a GPU machine, and
unpacks it there (numpy only).

    pack_checkpoint.py pack   model.safetensors weights16.shuf.xz
    pack_checkpoint.py unpack weights16.shuf.xz model.safetensors

`pack` rounds every F32 tensor to F16 and stores the bytes shuffled (all low
bytes, then all high bytes), which xz packs tighter: all-MiniLM-L6-v2 goes
from 91 MB to 38.7 MB. `unpack` restores an F32 file grid reads. The weights
are the original rounded to F16 (relative error ≤ 5e-4): a different
checkpoint, with its own cache keys, for throughput runs and for results
labelled as such."""
import json
import lzma
import struct
import sys

import numpy as np


def read(raw):
    n = struct.unpack('<Q', raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write(path, header, chunks):
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for c in chunks:
            f.write(c)


def convert(header, body, src_dtype, dst_dtype, dst_np):
    out, chunks, off = {}, [], 0
    for name, info in header.items():
        if name == '__metadata__':
            out[name] = info
            continue
        a, b = info['data_offsets']
        data, dtype = body[a:b], info['dtype']
        if dtype == src_dtype:
            src_np = '<f4' if src_dtype == 'F32' else '<f2'
            data, dtype = np.frombuffer(data, dtype=src_np).astype(dst_np).tobytes(), dst_dtype
        out[name] = {'dtype': dtype, 'shape': info['shape'], 'data_offsets': [off, off + len(data)]}
        chunks.append(data)
        off += len(data)
    return out, chunks


def pack(src, dst):
    header, body = read(open(src, 'rb').read())
    header, chunks = convert(header, body, 'F32', 'F16', '<f2')
    body = b''.join(chunks)
    half = len(body) // 2
    pairs = np.frombuffer(body[:2 * half], dtype=np.uint8).reshape(-1, 2)
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    with lzma.open(dst, 'wb', preset=9 | lzma.PRESET_EXTREME) as f:
        f.write(struct.pack('<Q', len(h)) + h)
        f.write(pairs[:, 0].tobytes())
        f.write(pairs[:, 1].tobytes())
        f.write(body[2 * half:])


def unpack(src, dst):
    header, body = read(lzma.open(src).read())
    half = len(body) // 2
    pairs = np.empty((half, 2), dtype=np.uint8)
    pairs[:, 0] = np.frombuffer(body[:half], dtype=np.uint8)
    pairs[:, 1] = np.frombuffer(body[half:2 * half], dtype=np.uint8)
    body = pairs.tobytes() + body[2 * half:]
    header, chunks = convert(header, body, 'F16', 'F32', '<f4')
    write(dst, header, chunks)


if __name__ == '__main__':
    if len(sys.argv) != 4 or sys.argv[1] not in ('pack', 'unpack'):
        sys.exit(__doc__)
    (pack if sys.argv[1] == 'pack' else unpack)(sys.argv[2], sys.argv[3])
