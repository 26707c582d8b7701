#!/usr/bin/python3
"""Small hand-made CTF 1.8 traces, one per reader defect found against babeltrace2 2.0.4 (CTFReaderTests/
RandomDifferentialTests.swift writes each and compares `rltrace dump` with `babeltrace2 --clock-seconds`).

  ctf_cases.py CASE DIR
"""
import os, sys
from ctf_random import Bits

HDR = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace { major = 1; minor = 8; byte_order = le; packet.header := struct { uint32_t magic; uint32_t stream_id; %s }; };
clock { name = c; freq = %d; offset_s = %d; offset = %d; };
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts64;
"""
MAGIC = 0xC1FC1FC1


def write(d, meta, streams):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metadata"), "w") as f:
        f.write(meta)
    for name, data in streams.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def packet(w, header, context, events, pad_bytes=0):
    """One packet: header ints, context (timestamp_begin, timestamp_end, content_size, packet_size + extra),
    events; sizes patched in afterwards. `events` write themselves with w."""
    start = w.pos
    w.origin = start
    for v, size in header:
        w.int(v, size, False)
    cs_at = None
    for kind, v, size in context:
        if kind == "sizes":
            cs_at = w.pos
            w.int(0, 64, False); w.int(0, 64, False)
        else:
            w.int(v, size, False)
    for e in events:
        e(w)
    content = w.pos - start
    total = (content + 7) // 8 * 8 + 8 * pad_bytes
    end = start + total
    w.pos = cs_at
    w.int(content, 64, False); w.int(total, 64, False)
    w.pos = end
    w._ensure(end)


def case_clock(d):
    # A 2.99 GHz clock with an offset: babeltrace2 converts offset and value apart, in double, truncated.
    f, oc = 2992045000, 1234567891
    meta = HDR % ("", f, 1641396363, oc) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "tick"; fields := struct { uint64_t cycles; }; };
"""
    cycles = [5183230086075223, 11996474469916032, 13090605931195947, 17946138350965620, 25835206428967065,
              28061915146523973, 29410382195694242]
    w = Bits()
    def ev(c):
        return lambda w: (w.int(c, 64, False), w.int(c, 64, False))
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", cycles[0], 64), ("ts", cycles[-1], 64), ("sizes", 0, 0)],
           [ev(c) for c in cycles])
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_ties(d):
    # Equal timestamps in four streams: babeltrace2 orders them by stream class id, then stream id (the
    # first packet's stream_instance_id), then path — not by file name.
    meta = HDR % ("uint32_t stream_instance_id;", 1000000000, 0, 0) + """
stream { id = 0; packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
stream { id = 1; packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "a"; stream_id = 0; fields := struct { uint32_t file; }; };
event { name = "b"; stream_id = 1; fields := struct { uint32_t file; }; };
"""
    streams = {}
    for i, (name, sc, inst) in enumerate([("s0", 1, 0), ("s1", 0, 9), ("s2", 0, 2), ("s3", 0, 5)]):
        w = Bits()
        def ev(t, i=i):
            return lambda w: (w.int(t, 64, False), w.int(i, 32, False))
        packet(w, [(MAGIC, 32), (sc, 32), (inst, 32)], [("ts", 100, 64), ("ts", 300, 64), ("sizes", 0, 0)],
               [ev(100), ev(200), ev(200), ev(300)])
        streams[name] = bytes(w.buf)
    write(d, meta, streams)


def case_pcbase(d):
    # Packet context fields in their display bases (cpu_id declared `base = x`), with the fields babeltrace2
    # reads itself left out, and a string.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct {
            ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size;
            integer { size = 32; align = 8; signed = false; base = x; } cpu_id;
            integer { size = 16; align = 8; signed = true; base = 2; } flags;
            integer { size = 8; align = 8; signed = false; base = 8; } mode;
            uint64_t events_discarded; uint32_t packet_seq_num; string tag; };
         event.header := struct { ts64 timestamp; };
         event.context := struct { integer { size = 16; align = 8; signed = false; base = 16; } h; }; };
event { name = "e"; context := struct { integer { size = 8; align = 8; signed = true; base = 8; } o; };
        fields := struct { integer { size = 32; align = 8; signed = false; base = 2; } b; }; };
"""
    w = Bits()
    def ev(t):
        return lambda w: (w.int(t, 64, False), w.int(0xBEEF, 16, False), w.int(-3, 8, False), w.int(5, 32, False))
    def strfield(w):
        w.raw(b"cpu-one\0")
    start = w.pos
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 10, 64), ("ts", 20, 64), ("sizes", 0, 0), ("i", 1, 32), ("i", -2, 16),
                                       ("i", 9, 8), ("i", 0, 64), ("i", 0, 32)],
           [strfield, ev(10), ev(20)])
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_align(d):
    # The second packet starts 3 bytes past a multiple of 8: its 64-bit aligned fields align from the packet.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "e"; fields := struct { uint8_t a; integer { size = 64; align = 64; signed = false; } x; uint8_t b;
        integer { size = 32; align = 32; signed = false; } y; }; };
"""
    w = Bits()
    def ev(t, x):
        def f(w):
            w.int(t, 64, False); w.int(7, 8, False); w.align(64); w.int(x, 64, False); w.int(8, 8, False)
            w.align(32); w.int(x & 0xffffffff, 32, False)
        return f
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 1, 64), ("ts", 2, 64), ("sizes", 0, 0)], [ev(1, 0x1122334455667788)], pad_bytes=3)
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 3, 64), ("ts", 4, 64), ("sizes", 0, 0)], [ev(3, 0x0102030405060708), ev(4, 42)])
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_noid(d):
    # No `id` in the event header: the stream class's only event class, whatever id it declares.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "only"; id = 7; fields := struct { uint8_t v; }; };
"""
    w = Bits()
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 5, 64), ("ts", 6, 64), ("sizes", 0, 0)],
           [lambda w: (w.int(5, 64, False), w.int(1, 8, False)), lambda w: (w.int(6, 64, False), w.int(2, 8, False))])
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_emptyafter(d):
    # A `filename` string written empty between two written whole (a path the kernel tracer could
    # not copy): babeltrace2 2.0.4 prints the earlier event's value there (docs/reader.md, "Known
    # babeltrace2 2.0.4 quirks"); the values written are the truth.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { uint32_t id; ts64 timestamp; }; };
event { name = "sys_open"; id = 0; fields := struct { string filename; uint32_t flags; }; };
"""
    w = Bits()
    names = [b"/etc/passwd", b"", b"/tmp/x", b"", b""] * 20     # 2.0.4 turns stale after a few events
    evs = [lambda w, i=i, n=n: (w.int(0, 32, False), w.int(10 + i, 64, False), w.raw(n + b"\0"), w.int(i, 32, False))
           for i, n in enumerate(names)]
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 10, 64), ("ts", 200, 64), ("sizes", 0, 0)], evs)
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_signedbases(d):
    # Negative values of odd-sized signed integers in hexadecimal (whole nibbles), octal (whole digits), binary.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "e"; fields := struct {
    integer { size = 9; align = 8; signed = true; base = x; } h9;
    integer { size = 7; align = 8; signed = true; base = 8; } o7;
    integer { size = 5; align = 8; signed = true; base = 2; } b5;
    integer { size = 26; align = 8; signed = true; base = 16; } h26;
    integer { size = 10; align = 8; signed = false; base = 8; } uo10; }; };
"""
    w = Bits()
    def ev(t, v):
        return lambda w: (w.align(8), w.int(t, 64, False), w.int(v, 9, False), w.align(8), w.int(v, 7, False), w.align(8),
                          w.int(v, 5, False), w.align(8), w.int(v, 26, False), w.align(8), w.int(v, 10, False))
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 1, 64), ("ts", 3, 64), ("sizes", 0, 0)], [ev(1, -1), ev(2, -16), ev(3, 5)])
    write(d, meta, {"stream_0": bytes(w.buf)})


def case_strings(d):
    # LTTng's compact and large event headers (the reader's fast path skips such bodies with a NUL scan) and
    # a body the interpreter decodes (a bit field, a sequence and a variant before the strings): strings of
    # every length 1-300 at every offset modulo 8, in the stream event context, event context and payload, and
    # empty strings after each. A field is either always empty or never (babeltrace2 2.0.4 prints a recycled
    # field's earlier value for an empty string).
    lttng = """
typealias integer { size = 27; align = 1; signed = false; map = clock.c.value; } := uint27_clock_monotonic_t;
typealias integer { size = 32; align = 8; signed = false; map = clock.c.value; } := uint32_clock_monotonic_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := uint64_clock_monotonic_t;
struct event_header_compact {
    enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
    variant <id> { struct { uint27_clock_monotonic_t timestamp; } compact;
                   struct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended; } v;
} align(8);
struct event_header_large {
    enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;
    variant <id> { struct { uint32_clock_monotonic_t timestamp; } compact;
                   struct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended; } v;
} align(8);
"""
    meta = HDR % ("", 1000000000, 1600000000, 0) + lttng + """
stream { id = 0; packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; uint32_t cpu_id; };
         event.header := struct event_header_compact;
         event.context := struct { string procname; uint8_t pad; string empty; }; };
stream { id = 1; packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; uint32_t cpu_id; };
         event.header := struct event_header_large; };
event { name = "sys_open"; id = 0; stream_id = 0; fields := struct { string filename; uint32_t flags; string nothing; uint16_t mode; }; };
event { name = "syscall_entry_access"; id = 40; stream_id = 0; context := struct { string ctx; };
        fields := struct { uint8_t o; string filename; uint32_t mode; }; };
event { name = "mixed"; id = 1; stream_id = 1; fields := struct {
        integer { size = 3; align = 1; signed = false; } bits; uint8_t n; uint8_t seq[n];
        enum : uint8_t { a = 0, b = 1 } tag; variant <tag> { uint16_t a; string b; } v;
        string filename; string nothing; uint8_t after; }; };
event { name = "long_id"; id = 70000; stream_id = 1; fields := struct { string filename; uint8_t after; }; };
"""
    def text(n, salt):
        pool = "abcdefghijklmnopqrstuvwxyz/._-0123456789"
        return bytes(pool[(i * 7 + salt) % len(pool)].encode()[0] for i in range(n))
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 255, 256, 257, 299, 300]
    streams = {}
    # Stream 0: compact headers; ids 0 (compact) and 40 (extended: 13-byte header, odd offsets).
    w = Bits()
    evs = []
    t = 1000
    k = 0
    for pre in range(8):
        for n in lengths:
            k += 1
            t += 3
            def e(w, t=t, n=n, pre=pre, k=k):
                w.align(8)
                if k % 2:
                    w.int(0 | (t & ((1 << 27) - 1)) << 5, 32, False)
                    w.raw(text(pre + 1, k) + b"\0"); w.int(pre, 8, False); w.raw(b"\0")
                    w.raw(text(n, k) + b"\0"); w.int(0xdeadbeef, 32, False); w.raw(b"\0"); w.int(0x1234, 16, False)
                else:
                    w.int(31, 5, False); w.align(8); w.int(40, 32, False); w.int(t, 64, False)
                    w.raw(text(pre, k + 1) + b"\0"); w.int(pre, 8, False); w.raw(b"\0")
                    w.raw(text(n % 5 + 1, k) + b"\0")
                    w.int(pre, 8, False); w.raw(text(n, k) + b"\0"); w.int(n, 32, False)
            evs.append(e)
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 1000, 64), ("ts", t, 64), ("sizes", 0, 0), ("i", 0, 32)], evs)
    streams["chan_0"] = bytes(w.buf)
    # Stream 1: large headers; the interpreted body and an extended id.
    w = Bits()
    evs = []
    t = 1000
    k = 0
    for pre in range(8):
        for n in lengths:
            k += 1
            t += 5
            def e(w, t=t, n=n, pre=pre, k=k):
                w.align(8)
                if k % 3:
                    w.int(1, 16, False); w.int(t & 0xffffffff, 32, False)
                    w.int(5, 3, False); w.align(8); w.int(pre, 8, False)
                    for i in range(pre):
                        w.int(i, 8, False)
                    tag = k % 2
                    w.int(tag, 8, False)
                    if tag == 0:
                        w.int(0xabcd, 16, False)
                    else:
                        w.raw(text(pre, k) + b"\0")
                    w.raw(text(n, k) + b"\0"); w.raw(b"\0"); w.int(n & 0xff, 8, False)
                else:
                    w.int(65535, 16, False); w.int(70000, 32, False); w.int(t, 64, False)
                    w.raw(text(n, k) + b"\0"); w.int(pre, 8, False)
            evs.append(e)
    packet(w, [(MAGIC, 32), (1, 32)], [("ts", 1000, 64), ("ts", t, 64), ("sizes", 0, 0), ("i", 1, 32)], evs)
    streams["chan_1"] = bytes(w.buf)
    write(d, meta, streams)


def case_emptyelements(d):
    # Arrays and sequences of empty structures ending the packet's content: no bits left, none needed.
    meta = HDR % ("", 1000000000, 0, 0) + """
stream { packet.context := struct { ts64 timestamp_begin; ts64 timestamp_end; uint64_t content_size; uint64_t packet_size; };
         event.header := struct { ts64 timestamp; }; };
event { name = "e"; fields := struct { uint8_t n; struct { } s[n]; struct { string t[0]; struct { } u; } a[3]; }; };
"""
    w = Bits()
    packet(w, [(MAGIC, 32), (0, 32)], [("ts", 1, 64), ("ts", 2, 64), ("sizes", 0, 0)],
           [lambda w: (w.int(1, 64, False), w.int(4, 8, False)), lambda w: (w.int(2, 64, False), w.int(0, 8, False))])
    write(d, meta, {"stream_0": bytes(w.buf)})


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        print("usage: ctf_cases.py {%s} DIR" % ",".join(sorted(CASES)), file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]](sys.argv[2])
