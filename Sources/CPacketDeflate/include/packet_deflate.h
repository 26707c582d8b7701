// A deflate writer that knows the Perfetto export's packets (Sources/CPacketDeflate/packet_deflate.c):
// zlib streams of whole `Trace.packet` fields, each packet matched against an earlier one that
// begins like it. docs/benchmarks.md, "The Perfetto export: a deflate that knows the packets",
// measures it against igzip's level 0, which the export used before and still uses for anything
// that is not a buffer of whole packets.
#ifndef RL_PACKET_DEFLATE_H
#define RL_PACKET_DEFLATE_H

#include <stddef.h>
#include <stdint.h>

/// Writes one zlib stream (RFC 1950: header, one fixed-Huffman deflate block, Adler-32) of the
/// whole packets at the start of `in[0..<in_size)` — each `0x0A`, a varint length, that many
/// bytes — into `out`, taking packets while the stream stays within `limit` bytes (at most
/// `out_capacity` − 8: the writer stores 8 bytes at a time); the checksum is ISA-L's Adler-32 (the
/// library the export's igzip deflate comes from). Returns the stream's size and sets
/// `*consumed` to the bytes of the packets it holds; returns 0 with `*consumed` 0 when the first
/// packet is not a whole packet of at most 65 536 bytes, or does not fit.
size_t rl_packet_deflate(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_capacity, size_t limit,
                         size_t *consumed);

#endif
