# The Perfetto export with every TracePacket.compressed_packets inflated in place (zlib, as
# Perfetto's trace processor reads them): writes the packets as they are to stdout, and
# `runs=N biggest=M` (compressed packets, the largest one's size in bytes) to stderr.
# Used by Tests/rltraceTests/PerfettoExportTests.swift.
import sys, zlib
def varint(b, i):
    v = s = 0
    while True:
        x = b[i]; i += 1; v |= (x & 0x7F) << s; s += 7
        if x < 0x80: return v, i
def fields(b):
    i = 0
    while i < len(b):
        start = i
        key, i = varint(b, i)
        wt = key & 7
        if wt == 2:
            n, i = varint(b, i); yield key >> 3, b[i:i+n], b[start:i+n]; i += n
        elif wt == 0:
            _, i = varint(b, i); yield key >> 3, None, b[start:i]
        elif wt == 1: i += 8; yield key >> 3, None, b[start:i]
        elif wt == 5: i += 4; yield key >> 3, None, b[start:i]
        else: raise SystemExit(f"wire type {wt} at {start}")
data = open(sys.argv[1], 'rb').read()
out = bytearray(); runs = 0; biggest = 0
for num, payload, raw in fields(data):
    if num == 1:
        inner = list(fields(payload))
        if len(inner) == 1 and inner[0][0] == 50:
            runs += 1; biggest = max(biggest, len(raw)); out += zlib.decompress(inner[0][1]); continue
    out += raw
sys.stdout.buffer.write(out)
sys.stderr.write(f"runs={runs} biggest={biggest}\n")
