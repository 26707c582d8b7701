#!/usr/bin/python3
"""An independent CTF 1.8 writer of random traces, and a differential run of `rltrace dump` against
`babeltrace2 --clock-seconds` on them (docs/reader.md, "Randomized differential test").

  ctf_random.py --rltrace PATH [--count N] [--seed S] [--jobs J] [--keep DIR]
  ctf_random.py --write DIR --seed S          (writes one trace, for a look at a failing seed)

Each seed gives one trace: random metadata (integers of every size 1-64, alignment, byte order,
signedness and base; floats; strings of 0-300 bytes at every byte offset; enumerations; structures,
variants, arrays and sequences nested; a clock of any frequency with offsets), one to four stream
files of one or two stream classes, packets with and without content and packet sizes, timestamps
colliding across streams. The outputs are compared byte for byte; a failure prints the seed and the
first differing line. A trace babeltrace2 refuses is counted as such (and printed), not compared.
Only the standard library: no bt2 module is needed to write.
"""
import os, random, struct, subprocess, sys, tempfile, shutil, time, argparse

KEYWORDS = {"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event", "floating_point",
            "float", "integer", "int", "long", "short", "signed", "stream", "string", "struct", "trace",
            "typealias", "typedef", "unsigned", "variant", "void", "_Bool", "_Complex", "_Imaginary"}


class Bits:
    """A bit writer: CTF 1.8 bit order (little endian: from each byte's least significant bit; big
    endian: from its most significant bit)."""
    def __init__(self):
        self.buf = bytearray()
        self.pos = 0
        self.origin = 0  # the packet's first bit: alignments count from it

    def _ensure(self, bits):
        need = (bits + 7) // 8
        if len(self.buf) < need:
            self.buf.extend(b"\0" * (need - len(self.buf)))

    def align(self, a):
        if a > 1:
            self.pos = self.origin + (self.pos - self.origin + a - 1) // a * a
            self._ensure(self.pos)

    def int(self, v, size, be):
        v &= (1 << size) - 1
        self._ensure(self.pos + size)
        if not be and self.pos % 8 == 0 and size % 8 == 0:
            self.buf[self.pos // 8:self.pos // 8 + size // 8] = v.to_bytes(size // 8, "little")
        elif be and self.pos % 8 == 0 and size % 8 == 0:
            self.buf[self.pos // 8:self.pos // 8 + size // 8] = v.to_bytes(size // 8, "big")
        else:
            for i in range(size):
                p = self.pos + i
                if be:
                    bit = (v >> (size - 1 - i)) & 1
                    if bit:
                        self.buf[p // 8] |= 0x80 >> (p % 8)
                else:
                    bit = (v >> i) & 1
                    if bit:
                        self.buf[p // 8] |= 1 << (p % 8)
        self.pos += size

    def raw(self, b):
        assert self.pos % 8 == 0
        self._ensure(self.pos)
        self.buf[self.pos // 8:self.pos // 8 + len(b)] = b
        self.pos += 8 * len(b)
        self._ensure(self.pos)


def alignment(t):
    k = t["k"]
    if k in ("int", "float"):
        return t["align"]
    if k == "enum":
        return t["int"]["align"]
    if k == "str":
        return 8
    if k == "struct":
        return max([t.get("align", 1)] + [alignment(ft) for _, ft in t["fields"]])
    if k in ("array", "seq"):
        return alignment(t["elem"])
    return 1  # variant: its option's


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.names = 0
        self.le = self.r.random() < 0.8

    def name(self):
        self.names += 1
        return "f%d" % self.names

    # ---- types
    def int_type(self, size=None, signed=None, align=None, text=False):
        r = self.r
        size = size or r.choice([r.randint(1, 64), 8, 16, 32, 64, r.randint(1, 8)])
        if align is None:
            align = r.choice([1, 8, 8, 16, 32, 64]) if size % 8 else r.choice([8, 8, 8, 16, 32, 64, 1])
        be = not self.le
        if size % 8 == 0 and align % 8 == 0 and r.random() < 0.25:
            be = not be  # the other byte order, only whole bytes on byte boundaries
        base = r.choice([10, 10, 16, 8, 2, "x", "hex", "o", "b", "d", "u", "p"])
        if 61 <= size <= 63 and base in (16, "x", "hex", "p"):
            # babeltrace2 2.0.4 prints 0x0 for these: it masks to `(1 << 64) - 1` (a shift by 64).
            base = 10
        return {"k": "int", "size": size, "align": align, "signed": (r.random() < 0.4) if signed is None else signed,
                "be": be, "bo": r.choice(["native", "be" if be else "le"]), "base": base, "text": text}

    def scalar(self):
        r = self.r
        c = r.random()
        if c < 0.40:
            return self.int_type()
        if c < 0.55:
            # babeltrace2 2.0.4 prints an empty string as the value the field held in an earlier event (its
            # string fields are recycled and cleared without a NUL: fixed upstream by 0022a8781, "Fix:
            # clear_string_field(): set first character to 0"). So a string field is either always empty or
            # never: empty strings are compared at every position, without that stale value.
            return {"k": "str", "empty": r.random() < 0.15}
        if c < 0.65:
            size = r.choice([32, 64])
            be = not self.le
            a = r.choice([8, 32, 64, 1]) if True else 8
            if a % 8 == 0 and r.random() < 0.2:
                be = not be
            return {"k": "float", "size": size, "align": a, "be": be}
        if c < 0.80:
            return self.enum_type()
        return self.int_type(size=r.choice([8, 16, 32, 64]))

    def enum_type(self, n=None):
        r = self.r
        n = n or r.randint(1, 5)
        labels, v = [], r.randint(0, 3)
        for i in range(n):
            width = r.choice([0, 0, 0, 2])
            labels.append(("L%d" % i, v, v + width))
            v += width + 1 + r.choice([0, 0, 2])
        signed = r.random() < 0.3
        need = labels[-1][2].bit_length() + (1 if signed else 0)
        it = self.int_type(size=max(need, r.choice([8, 16, 32, r.randint(3, 12)])), signed=signed)
        return {"k": "enum", "int": it, "labels": labels}

    def struct_fields(self, depth, count, inelem=False):
        r = self.r
        fields = []
        for _ in range(count):
            c = r.random()
            if depth < 3 and c < 0.08:
                fields.append((self.name(), {"k": "struct", "fields": self.struct_fields(depth + 1, r.randint(0, 4)),
                                             "align": r.choice([1, 1, 8, 32, 64])}))
            elif depth < 3 and c < 0.15:
                fields.append((self.name(), {"k": "array", "elem": self.elem(depth), "len": r.randint(0, 4)}))
            elif depth <= 1 and c < 0.23 and not inelem:
                ln = self.name()
                fields.append((ln, self.int_type(size=r.choice([8, 16, 32, 5]), signed=False)))
                fields.append((self.name(), {"k": "seq", "elem": self.elem(depth), "lenref": ln}))
            elif depth <= 1 and c < 0.30 and not inelem:
                tn = self.name()
                tag = self.enum_type(r.randint(1, 4))
                fields.append((tn, tag))
                opts = [(l, self.elem(depth)) for l, _, _ in tag["labels"]]
                fields.append((self.name(), {"k": "variant", "tag": tn, "opts": opts}))
            elif c < 0.36:
                n = r.randint(1, 12)
                t = {"k": "array" if r.random() < 0.5 or inelem or depth > 1 else "seq", "elem": self.int_type(size=8, align=8, text=True),
                     "len": n}
                if t["k"] == "seq":
                    ln = self.name()
                    fields.append((ln, self.int_type(size=r.choice([8, 16, 32]), signed=False)))
                    t["lenref"] = ln
                fields.append((self.name(), t))
            else:
                fields.append((self.name(), self.scalar()))
        return fields

    def elem(self, depth):
        r = self.r
        if depth < 2 and r.random() < 0.25:
            # (babeltrace2 2.0 asserts on a sequence or variant inside an array element or variant option.)
            return {"k": "struct", "fields": self.struct_fields(depth + 1, r.randint(1, 3), inelem=True), "align": 1}
        return self.scalar()

    # ---- TSDL
    def tsdl(self, t, ind="\t"):
        k = t["k"]
        if k == "int":
            bo = t["bo"] if t["bo"] else ("be" if t["be"] else "le")
            if bo == "native" and t["be"] == self.le:
                bo = "be" if t["be"] else "le"
            s = "integer { size = %d; align = %d; signed = %s; byte_order = %s; base = %s;%s%s }" % (
                t["size"], t["align"], "true" if t["signed"] else "false", bo, t["base"],
                " encoding = UTF8;" if t["text"] else "", (" map = %s;" % t["map"]) if t.get("map") else "")
            return s
        if k == "float":
            e, m = (8, 24) if t["size"] == 32 else (11, 53)
            return "floating_point { exp_dig = %d; mant_dig = %d; align = %d; byte_order = %s; }" % (
                e, m, t["align"], "be" if t["be"] else "le")
        if k == "str":
            return self.r.choice(["string", "string { encoding = UTF8; }"])
        if k == "enum":
            ls = ", ".join(('"%s" = %d' % (l, lo)) if lo == hi else ('"%s" = %d ... %d' % (l, lo, hi))
                           for l, lo, hi in t["labels"])
            return "enum : %s { %s }" % (self.tsdl(t["int"]), ls)
        if k == "struct":
            body = "".join("%s\t%s;\n" % (ind, self.decl(n, ft, ind + "\t")) for n, ft in t["fields"])
            a = t.get("align", 1)
            return "struct {\n%s%s}%s" % (body, ind, (" align(%d)" % a) if a > 1 else "")
        if k == "variant":
            body = "".join("%s\t%s;\n" % (ind, self.decl(n, ft, ind + "\t")) for n, ft in t["opts"])
            return "variant <%s> {\n%s%s}" % (t["tag"], body, ind)
        raise ValueError(k)

    def decl(self, name, t, ind):
        if t["k"] == "array":
            return "%s %s[%d]" % (self.tsdl(t["elem"], ind), name, t["len"])
        if t["k"] == "seq":
            return "%s %s[%s]" % (self.tsdl(t["elem"], ind), name, t["lenref"])
        return "%s %s" % (self.tsdl(t, ind), name)

    # ---- values, written as they are chosen
    def text(self, n):
        r = self.r
        pool = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 /._-:=+"
        extra = ["\n", "\t", "\"", "\\", "'", "?", "\x01", "\x7f", "é", "日本", "\x1b"]
        out = []
        size = 0
        while size < n:
            c = r.choice(extra) if r.random() < 0.04 else r.choice(pool)
            b = c.encode()
            if size + len(b) > n:
                c, b = "x", b"x"
            out.append(b)
            size += len(b)
        return b"".join(out)

    def str_len(self):
        r = self.r
        return r.choice([0, 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, r.randint(0, 40), r.randint(0, 40), r.randint(0, 300),
                         r.randint(250, 300), 255, 256, 257])

    def write(self, t, w, sib, lens):
        r = self.r
        k = t["k"]
        w.align(alignment(t))
        if k == "int":
            if t.get("fixed") is not None:
                v = t["fixed"]
            elif "lenof" in t:
                v = lens[t["lenof"]]
            else:
                size = t["size"]
                v = r.choice([0, 1, (1 << size) - 1, 1 << (size - 1), r.getrandbits(size), r.getrandbits(min(size, 7))])
            w.int(v, t["size"], t["be"])
            return v
        if k == "float":
            v = r.choice([0.0, 1.0, -2.5, 1e-3, 3.14159, 1e300 if t["size"] == 64 else 1e30, r.uniform(-1e6, 1e6),
                          r.uniform(-1, 1), float(r.randint(-100000, 100000))])
            bits = struct.unpack("<I", struct.pack("<f", v))[0] if t["size"] == 32 else \
                struct.unpack("<Q", struct.pack("<d", v))[0]
            w.int(bits, t["size"], t["be"])
            return v
        if k == "str":
            s = b"" if t.get("empty") else self.text(max(1, self.str_len()))
            w.raw(s.replace(b"\0", b"x") + b"\0")
            return s
        if k == "enum":
            it = t["int"]
            if "choose" in t:
                lo, hi = t["labels"][t["choose"]][1:]
                v = r.randint(lo, hi)
            elif r.random() < 0.85:
                _, lo, hi = r.choice(t["labels"])
                v = r.randint(lo, hi)
            else:
                v = r.getrandbits(it["size"] - (1 if it["signed"] else 0))
            lim = (1 << (it["size"] - 1)) if it["signed"] else (1 << it["size"])
            if v >= lim:
                v = t["labels"][0][1]
            w.int(v, it["size"], it["be"])
            return v
        if k == "struct":
            return self.write_fields(t["fields"], w)
        if k in ("array", "seq"):
            n = t["len"] if k == "array" else sib[t["lenref"]]
            e = t["elem"]
            if e.get("text"):
                s = self.text(r.randint(1, n)) if n > 0 else b""
                s = s[:n]
                if n > 0 and len(s) == 0:
                    s = b"a"
                if n > 0 and s[0:1] == b"\0":
                    s = b"a" + s[1:]
                s = s + b"\0" * (n - len(s))
                w.align(8)
                w.raw(s)
                return s
            for _ in range(n):
                self.write(e, w, {}, {})
            return n
        if k == "variant":
            i = sib[t["tag"] + "#opt"]
            return self.write(t["opts"][i][1], w, {}, {})
        raise ValueError(k)

    def write_fields(self, fields, w):
        """Writes a structure's fields; sequence lengths and variant tags are chosen before they are written."""
        r = self.r
        sib = {}
        plan_len, plan_opt = {}, {}
        for n, ft in fields:
            if ft["k"] == "seq":
                e = ft["elem"]
                plan_len[ft["lenref"]] = r.randint(1, ft.get("len", 4)) if e.get("text") else r.randint(0, 4)
            if ft["k"] == "variant":
                plan_opt[ft["tag"]] = r.randrange(len(ft["opts"]))
        for n, ft in fields:
            if n in plan_len:
                t = dict(ft)
                v = plan_len[n]
                t["fixed"] = v
                self.write(t, w, sib, {})
                sib[n] = v
            elif n in plan_opt:
                t = dict(ft)
                t["choose"] = plan_opt[n]
                sib[n] = self.write(t, w, sib, {})
                sib[n + "#opt"] = plan_opt[n]
            else:
                sib[n] = self.write(ft, w, sib, {})
        return sib


def make_trace(seed, out):
    g = Gen(seed)
    r = g.r
    bo = "le" if g.le else "be"
    be = not g.le
    freq = r.choice([1000000000, 1000000000, r.randint(2400000000, 3300000000), r.randint(2400000000, 3300000000),
                     1000, 32768, 1000000, r.randint(1, 5000000000), 2400000000, 3000000000])
    offset_s = r.choice([0, r.randint(1, 2000000000), 1641396363])
    offset = r.choice([0, r.randint(0, freq - 1), r.randint(0, 3 * freq)])
    uuid = bytes(r.getrandbits(8) for _ in range(16)) if r.random() < 0.5 else None
    meta = ["/* CTF 1.8 */\n"]
    def u(size, align=8, m=None):
        t = {"k": "int", "size": size, "align": align, "signed": False, "be": be, "bo": None, "base": 10, "text": False}
        if m:
            t["map"] = m
        return t
    cmap = "clock.c0.value"
    nsc = r.choice([1, 1, 2])
    has_sid = nsc > 1 or r.random() < 0.5
    has_inst = r.random() < 0.4
    ph = [("magic", u(32))] if r.random() < 0.8 else []
    if uuid:
        ph.append(("uuid", {"k": "array", "elem": u(8), "len": 16}))
    if has_sid:
        ph.append(("stream_id", u(r.choice([8, 16, 32]))))
    if has_inst:
        ph.append(("stream_instance_id", u(r.choice([16, 32, 64]))))
    trace = "trace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = %s;\n" % bo
    if uuid:
        import uuid as U
        trace += '\tuuid = "%s";\n' % str(U.UUID(bytes=uuid))
    trace += "\tpacket.header := %s;\n};\n" % g.tsdl({"k": "struct", "fields": ph}, "\t")
    meta.append(trace)
    if r.random() < 0.6:
        meta.append('env {\n\thostname = "%s";\n};\n' % r.choice(["host", "h-1", "machine.local"]))
    meta.append("clock {\n\tname = c0;\n\tfreq = %d;\n\toffset_s = %d;\n\toffset = %d;\n%s};\n" % (
        freq, offset_s, offset, ('\tuuid = "%s";\n' % "0123abcd-0000-4000-8000-00000000c0c0") if r.random() < 0.3 else ""))
    classes = []
    for sid in range(nsc):
        sizes = r.choice(["both", "both", "content", "none", "packet"])
        pc = [("timestamp_begin", u(64, m=cmap)), ("timestamp_end", u(64, m=cmap))]
        if sizes in ("both", "content"):
            pc.append(("content_size", u(r.choice([32, 64]))))
        if sizes in ("both", "packet"):
            pc.append(("packet_size", u(r.choice([32, 64]))))
        r.shuffle(pc)
        if r.random() < 0.6:
            t = g.int_type(size=32, signed=False, align=8)
            pc.insert(r.randint(0, len(pc)), ("cpu_id", t))
        if r.random() < 0.3:
            pc.insert(r.randint(0, len(pc)), (g.name(), g.int_type()))
        ts_bits = r.choice([64, 64, 64, 32, 27])
        nev = r.randint(1, 4)
        ids = sorted(r.sample(range(0, 300 if r.random() < 0.3 else 8), nev))
        eh = []
        if nev > 1 or r.random() < 0.5:
            eh.append(("id", u(r.choice([s for s in (8, 16, 32) if ids[-1] < 1 << s]), align=r.choice([1, 8]))))
        eh.append(("timestamp", u(ts_bits, align=r.choice([1, 8]) if ts_bits != 64 else 8, m=cmap)))
        # (babeltrace2 2.0 asserts on a sequence or variant in a context: only payloads get them.)
        sec = {"k": "struct", "fields": g.struct_fields(1, r.randint(1, 3), inelem=True)} if r.random() < 0.4 else None
        evs = []
        for eid in ids:
            ec = {"k": "struct", "fields": g.struct_fields(1, r.randint(1, 3), inelem=True)} if r.random() < 0.3 else None
            pl = {"k": "struct", "fields": g.struct_fields(0, r.randint(0, 6))} if r.random() < 0.95 else None
            evs.append({"id": eid, "name": r.choice(["ev", "p:ev", "a_b", "sys_open", "x"]) + str(eid), "ctx": ec, "pl": pl})
        # (babeltrace2 refuses a stream class `id` without a `stream_id` in the packet header.)
        s = "stream {\n%s\tpacket.context := %s;\n\tevent.header := %s;\n" % (
            ("\tid = %d;\n" % sid) if has_sid else "", g.tsdl({"k": "struct", "fields": pc}, "\t"), g.tsdl({"k": "struct", "fields": eh}, "\t"))
        if sec:
            s += "\tevent.context := %s;\n" % g.tsdl(sec, "\t")
        s += "};\n"
        meta.append(s)
        for e in evs:
            x = 'event {\n\tname = "%s";\n\tid = %d;\n%s' % (e["name"], e["id"], ("\tstream_id = %d;\n" % sid) if has_sid else "")
            if e["ctx"]:
                x += "\tcontext := %s;\n" % g.tsdl(e["ctx"], "\t")
            if e["pl"]:
                x += "\tfields := %s;\n" % g.tsdl(e["pl"], "\t")
            meta.append(x + "};\n")
        classes.append({"sid": sid, "pc": pc, "eh": eh, "sec": sec, "evs": evs, "sizes": sizes, "tsbits": ts_bits})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "metadata"), "w") as f:
        f.write("".join(meta))
    # Timestamps from a shared pool: equal values across streams.
    base = r.randint(0, min(1 << 62, freq * 100000000) // 2)
    step = r.choice([1, 3, 1000, freq // 1000 + 1, r.randint(1, 1 << 20)])
    nfiles = r.randint(1, 4)
    inst_ids = r.sample(range(0, 1000), nfiles)
    for fi in range(nfiles):
        c = r.choice(classes)
        w = Bits()
        npk = 1 if c["sizes"] in ("none",) else r.randint(1, 3)
        k = 0
        last = base
        for p in range(npk):
          snapshot = (bytearray(w.buf), w.pos, k, last)
          for attempt in range(30):
            w.buf, w.pos, k, last = bytearray(snapshot[0]), snapshot[1], snapshot[2], snapshot[3]
            start = w.pos
            w.origin = start
            nev = r.randint(0 if npk > 1 else 1, 8)
            tss = []
            for _ in range(nev):
                k += r.choice([0, 0, 1, 1, 2, 5])
                tss.append(base + k * step)
            if c["tsbits"] < 64:
                # Narrow timestamps extend from the last value: keep each gap below their range.
                tss = [t for t in tss]
                lim = (1 << c["tsbits"]) - 1
                prev = last
                for i, t in enumerate(tss):
                    if t - prev > lim:
                        t = prev + r.randint(0, lim)
                    tss[i] = t
                    prev = t
            tb = tss[0] if tss else last
            te = tss[-1] if tss else tb
            vals = {"timestamp_begin": tb, "timestamp_end": te, "magic": 0xC1FC1FC1, "stream_id": c["sid"],
                    "stream_instance_id": inst_ids[fi]}
            # Header and context are written twice: sizes are known after the events.
            def header(sizes):
                for n, t in ph:
                    if n == "uuid":
                        w.align(8)
                        w.raw(uuid)
                        continue
                    w.align(t["align"])
                    w.int(vals[n], t["size"], t["be"])
                w.align(alignment({"k": "struct", "fields": c["pc"]}))
                for n, t in c["pc"]:
                    if n in ("content_size", "packet_size"):
                        w.align(t["align"]); w.int(sizes[n], t["size"], t["be"])
                    elif n in vals:
                        w.align(t["align"]); w.int(vals[n], t["size"], t["be"])
                    else:
                        vals[n] = g.write(t, w, {}, {})
            w.pos = start
            header({"content_size": 0, "packet_size": 0})
            g.r = random.Random(seed * 7919 + fi * 31 + p)
            for ts in tss:
                e = r.choice(c["evs"])
                w.align(alignment({"k": "struct", "fields": c["eh"]}))
                for n, t in c["eh"]:
                    w.align(t["align"])
                    w.int(e["id"] if n == "id" else ts, t["size"], t["be"])
                for sc in (c["sec"], e["ctx"], e["pl"]):
                    if sc:
                        w.align(alignment(sc))
                        g.write_fields(sc["fields"], w)
            content = w.pos - start
            packet = content if c["sizes"] in ("none", "packet") else (content + 7) // 8 * 8
            if c["sizes"] == "both":
                packet += 8 * r.choice([0, 0, 1, 3, 64])
            end = w.pos
            w.pos = start
            g.r = r
            keep = dict(vals)
            header({"content_size": content, "packet_size": packet})
            vals.update(keep)
            w.pos = start + packet
            w._ensure(w.pos)
            if c["sizes"] == "content":
                w.pos = start + (content + 7) // 8 * 8
            last = te
            # (Without packet_size, babeltrace2 2.0 finds the next packet at a whole byte only when the content
            # ends on one: other contents are retried.)
            if c["sizes"] == "both" or content % 8 == 0:
                break
          if w.pos % 8:
              # (30 tries found no content ending on a byte: the next packet starts on one all the same.)
              w.pos = (w.pos + 7) // 8 * 8
              w._ensure(w.pos)
        data = bytes(w.buf[:(w.pos + 7) // 8])
        with open(os.path.join(out, "stream_%d" % fi), "wb") as f:
            f.write(data)
    return out


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    except subprocess.TimeoutExpired:
        return -1, b"", b"timed out after 30 s"
    return p.returncode, p.stdout, p.stderr


def compare(seed, rltrace, keep=None):
    d = tempfile.mkdtemp(prefix="ctfrand-")
    try:
        try:
            make_trace(seed, d)
        except Exception as e:
            return "differs", ["seed %d: the generator failed: %r" % (seed, e)]
        brc, bout, berr = run(["babeltrace2", "--clock-seconds", d])
        rrc, rout, rerr = run([rltrace, "dump", d])
        if brc != 0 or b" E PLUGIN" in berr:
            # (babeltrace2 2.0 may stop at a decoding error and still exit 0.)
            lines = berr.decode(errors="replace").splitlines()
            why = [l for l in lines if " E " in l or " F " in l or "Assertion" in l or "timed out" in l][:1] or lines[-1:]
            return "refused", [w[w.find("]") + 1:].strip()[:160] if "]" in w else w.strip()[:160] for w in why]
        if rrc != 0 or rout != bout:
            bl, rl = bout.split(b"\n"), rout.split(b"\n")
            i = next((i for i in range(max(len(bl), len(rl))) if (bl[i:i + 1] or [None]) != (rl[i:i + 1] or [None])),
                     len(rl) - 1)
            a = bl[i] if i < len(bl) else b""
            b = rl[i] if i < len(rl) else b""
            col = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            lo = max(0, col - 70)
            msg = ["seed %d: first difference at line %d, column %d (rltrace exit %d, %d lines; babeltrace2 %d lines)" % (
                seed, i + 1, col + 1, rrc, len(rl) - 1, len(bl) - 1),
                "  babeltrace2: %s%r" % ("…" if lo else "", a[lo:col + 90]),
                "  rltrace:     %s%r" % ("…" if lo else "", b[lo:col + 90])]
            if rrc != 0:
                msg.append("  rltrace stderr: %s" % rerr.decode(errors="replace").strip()[:400])
            if keep:
                dst = os.path.join(keep, "seed-%d" % seed)
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(d, dst)
                msg.append("  trace kept in %s" % dst)
            return "differs", msg
        return "same", None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rltrace")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep")
    ap.add_argument("--write")
    a = ap.parse_args()
    if a.write:
        make_trace(a.seed, a.write)
        print(a.write)
        return 0
    seeds = list(range(a.seed, a.seed + a.count))
    t0 = time.time()
    from concurrent.futures import ThreadPoolExecutor
    same = refused = 0
    failures = []
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for seed, (kind, msg) in zip(seeds, ex.map(lambda s: compare(s, a.rltrace, a.keep), seeds)):
            if kind == "same":
                same += 1
            elif kind == "refused":
                refused += 1
                print("seed %d: babeltrace2 refuses: %s" % (seed, " ".join(msg)))
            else:
                failures.append(seed)
                print("\n".join(msg))
    print("reader-differential: %d traces (seeds %d..%d): %d identical, %d refused by babeltrace2, %d differ; %.1f s"
          % (len(seeds), seeds[0], seeds[-1], same, refused, len(failures), time.time() - t0))
    if failures:
        print("failing seeds: %s" % " ".join(map(str, failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
