#!/usr/bin/python3
"""Copies an LTTng trace as if another host had recorded it (for the fleet tests).

    ctf_rehost.py SRC DST HOSTNAME SHIFT_NS

The copy's metadata (unpacked from LTTng's packetized form into CTF's plain-text form) names
HOSTNAME in `env.hostname`, has a new trace UUID (written into every data packet's header too, as
another session's would be) and its clock `offset` moved by SHIFT_NS: the same monotonic readings
on a host whose wall clock is SHIFT_NS ahead (or behind, negative). Data and index files are
otherwise byte-for-byte the source's.
"""
import os
import re
import shutil
import struct
import sys
import uuid

MAGIC = 0x75D11D57


def metadata_text(raw):
    """The TSDL text of a metadata file, packetized (magic 0x75D11D57) or not."""
    if len(raw) < 4 or struct.unpack_from("<I", raw, 0)[0] != MAGIC:
        return raw.decode()
    text, off = b"", 0
    while off + 37 <= len(raw):
        content_bits, packet_bits = struct.unpack_from("<II", raw, off + 24)
        text += raw[off + 37: off + content_bits // 8]
        off += packet_bits // 8
    return text.decode()


def rehost(src, dst, host, shift):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    for root, _, files in os.walk(dst):
        if "metadata" not in files:
            continue
        path = os.path.join(root, "metadata")
        text = metadata_text(open(path, "rb").read())
        old = re.search(r'trace \{[^}]*?uuid = "([0-9a-f-]+)"', text, re.S).group(1)
        new = str(uuid.uuid4())
        text = text.replace('uuid = "%s"' % old, 'uuid = "%s"' % new, 1)
        text = re.sub(r'hostname = "[^"]*"', 'hostname = "%s"' % host, text)
        text = re.sub(r"(clock \{.*?offset = )(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + shift),
                      text, count=1, flags=re.S)
        with open(path, "w") as f:
            f.write(text)
        old_bytes, new_bytes = uuid.UUID(old).bytes, uuid.UUID(new).bytes
        for name in files:
            p = os.path.join(root, name)
            if name == "metadata" or not os.path.isfile(p):
                continue
            data = open(p, "rb").read()
            if old_bytes in data:
                with open(p, "wb") as f:
                    f.write(data.replace(old_bytes, new_bytes))


if __name__ == "__main__":
    rehost(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
