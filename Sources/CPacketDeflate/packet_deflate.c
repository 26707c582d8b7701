// The Perfetto export's deflate of whole packets (include/packet_deflate.h). Written by hand for
// speed (docs/benchmarks.md, "The Perfetto export: a deflate that knows the packets"): the
// export's packets are short and each repeats an earlier one but for a few bytes (an END's
// timestamp; a BEGIN's timestamp, item or lengths), so each packet is compared with the last
// packet that began with the same 12 bytes after its tag (else the same 8 after its length: the
// same sequence, type and event length), and written as matches at that packet's distance and
// literals, in one block of deflate's fixed Huffman codes (RFC 1951, 3.2.6). No search, no second
// pass, 2 KB of code tables and 32 KB of slots on the stack: 3.8 times smaller than the packets, in three quarters of the
// time igzip's level 0 takes on them.
#include "packet_deflate.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <string.h>

// Each code as its bits (first bit lowest, as deflate writes them) in the low 24 bits and its
// length in the high 8.
static uint32_t lit_code[288];      // literals 0-255, end of block 256, lengths' codes 257-287
static uint32_t len_code[259];      // a match's length 3-258: its code and extra bits
static uint32_t distance_bits[30];  // the distance codes' 5 bits (no length byte)
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static uint32_t reversed(uint32_t c, int n) {
    uint32_t r = 0;
    for (int i = 0; i < n; i++) { r = (r << 1) | (c & 1); c >>= 1; }
    return r;
}

static void build_tables(void) {
    // RFC 1951, 3.2.6: the fixed literal/length code.
    for (int s = 0; s < 288; s++) {
        int n, c;
        if (s < 144) { n = 8; c = 0x30 + s; }
        else if (s < 256) { n = 9; c = 0x190 + (s - 144); }
        else if (s < 280) { n = 7; c = s - 256; }
        else { n = 8; c = 0xC0 + (s - 280); }
        lit_code[s] = reversed((uint32_t)c, n) | ((uint32_t)n << 24);
    }
    // RFC 1951, 3.2.5: lengths 3-258 as codes 257-285 and extra bits.
    static const int base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const int extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    for (int len = 3; len <= 258; len++) {
        int i = 28;
        if (len < 258) { i = 27; while (base[i] > len) i--; }
        uint32_t code = lit_code[257 + i];
        int n = (int)(code >> 24);
        uint32_t bits = (code & 0xFFFFFF) | ((uint32_t)(len - base[i]) << n);
        len_code[len] = bits | ((uint32_t)(n + extra[i]) << 24);
    }
    for (int code = 0; code < 30; code++) distance_bits[code] = reversed((uint32_t)code, 5);
}

// RFC 1951, 3.2.5: a distance of 1-32768 as its 5-bit code and extra bits (at most 18 bits).
static inline uint32_t distance_code(uint32_t d) {
    if (d <= 4) return distance_bits[d - 1] | (5u << 24);
    uint32_t x = d - 1;
    uint32_t hb = 31u - (uint32_t)__builtin_clz(x);
    uint32_t code = 2 * hb + ((x >> (hb - 1)) & 1), n = hb - 1;
    return distance_bits[code] | ((x & ((1u << n) - 1)) << 5) | ((5 + n) << 24);
}

// The bit writer: `acc` holds `nb` (< 8) bits not yet whole bytes; every write stores 8 bytes at
// `op` (the capacity checks leave room) and moves `op` past the whole bytes.
#define PUT_BITS(bits, count) do { \
    acc |= (uint64_t)(bits) << nb; nb += (count); \
    memcpy(op, &acc, 8); op += nb >> 3; acc >>= (nb & ~7u); nb &= 7u; } while (0)
#define PUT_CODE(code) PUT_BITS((code) & 0xFFFFFF, (code) >> 24)
// Two literals in one write (their codes are 8 or 9 bits each).
#define PUT_PAIR(p) do { uint32_t _a = lit_code[(p)[0]], _b = lit_code[(p)[1]]; \
    PUT_BITS((_a & 0xFFFFFF) | ((_b & 0xFFFFFF) << (_a >> 24)), (_a >> 24) + (_b >> 24)); } while (0)

#define TABLE_BITS 12

size_t rl_packet_deflate(const uint8_t *in, size_t in_size, uint8_t *out, size_t out_capacity, size_t limit,
                         size_t *consumed) {
    pthread_once(&tables_once, build_tables);
    *consumed = 0;
    if (out_capacity < 64) return 0;
    if (limit > out_capacity - 8) limit = out_capacity - 8;
    // The last packet seen whose 12 bytes after the tag (`last`), or whose 8 bytes after the
    // length (`last2`), hashed to each slot (its offset + 1; 0: none).
    uint32_t last[1 << TABLE_BITS], last2[1 << TABLE_BITS];
    memset(last, 0, sizeof last);
    memset(last2, 0, sizeof last2);
    uint8_t *op = out + 2;
    out[0] = 0x78; out[1] = 0x01;             // deflate, 32 KB window; the fastest level
    uint64_t acc = 3;                          // BFINAL = 1, BTYPE = 01 (fixed codes)
    unsigned nb = 3;
    size_t at = 0;
    while (at < in_size) {
        // The packet: 0x0A, its length as a varint (at most 3 bytes: 65 536 bytes at most), the rest.
        if (in[at] != 0x0A || at + 1 >= in_size) break;
        size_t plen;
        if (in[at + 1] < 0x80) {
            plen = 2 + (size_t)in[at + 1];        // the usual packet: shorter than 128 bytes
        } else {
            size_t p = at + 1, len = 0;
            unsigned shift = 0;
            int complete = 0;
            while (p < in_size && shift < 21) {
                uint8_t b = in[p++];
                len |= (size_t)(b & 0x7F) << shift;
                if (b < 0x80) { complete = 1; break; }
                shift += 7;
            }
            if (!complete || len > 65536) break;
            plen = p + len - at;
        }
        if (plen > in_size - at) break;
        // Room for the packet all as 9-bit literals, the end of the block and the checksum.
        if ((size_t)(op - out) + plen + plen / 8 + 16 > limit) break;
        const uint8_t *pk = in + at;
        uint32_t c = 0;
        if (at + 13 <= in_size) {
            uint64_t k1; uint32_t k2;
            memcpy(&k1, pk + 1, 8);
            memcpy(&k2, pk + 9, 4);
            // (A short packet's key takes the next one's first bytes: a worse guess, never a wrong
            // match — the bytes are compared below.)
            uint32_t slot = (uint32_t)(((k1 * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)k2 * 0xC2B2AE3D27D4EB4FULL)) >> (64 - TABLE_BITS));
            c = last[slot];
            last[slot] = (uint32_t)at + 1;
            // The last packet with the same 8 bytes after the length (its sequence, type and
            // the event's length): the next guess when nothing began quite like this one.
            uint64_t k3; memcpy(&k3, pk + 2, 8);
            uint32_t slot2 = (uint32_t)((k3 * 0xC2B2AE3D27D4EB4FULL) >> (64 - TABLE_BITS));
            if (!c || at - (c - 1) > 32768) c = last2[slot2];
            last2[slot2] = (uint32_t)at + 1;
        }
        size_t dist = c ? at - (c - 1) : 0;
        if (c && dist <= 32768 && plen <= 32) {
            // Which of the packet's bytes equal those `dist` bytes before them.
            const uint8_t *cp = pk - dist;
            uint64_t eq = 0;
#if defined(__SSE2__)
            if (at + 32 <= in_size) {
                __m128i a0 = _mm_loadu_si128((const __m128i *)pk), b0 = _mm_loadu_si128((const __m128i *)cp);
                __m128i a1 = _mm_loadu_si128((const __m128i *)(pk + 16)), b1 = _mm_loadu_si128((const __m128i *)(cp + 16));
                eq = (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0))
                   | ((uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1)) << 16);
            } else
#endif
            for (size_t i = 0; i < plen; i++) eq |= (uint64_t)(pk[i] == cp[i]) << i;
            eq &= (1ULL << plen) - 1;
            uint32_t dcode = distance_code((uint32_t)dist);
            size_t prefix = (size_t)__builtin_ctzll(~eq);
            if (prefix >= 3 && plen - prefix <= 4) {
                // The usual packet: all but its last bytes (a timestamp) as the earlier one's.
                uint32_t lc = len_code[prefix];
                PUT_BITS((uint64_t)(lc & 0xFFFFFF) | ((uint64_t)(dcode & 0xFFFFFF) << (lc >> 24)), (lc >> 24) + (dcode >> 24));
                size_t k = prefix;
                for (; k + 2 <= plen; k += 2) PUT_PAIR(pk + k);
                if (k < plen) PUT_CODE(lit_code[pk[k]]);
            } else {
                // Runs of 3 or more equal bytes as matches, the rest as literals.
                uint64_t r3 = eq & (eq >> 1) & (eq >> 2);
                uint64_t m = (r3 | (r3 << 1) | (r3 << 2)) & eq;
                size_t pos = 0;
                while (pos < plen) {
                    size_t lits = (size_t)__builtin_ctzll((m >> pos) | (1ULL << 63));
                    if (lits > plen - pos) lits = plen - pos;
                    size_t k = pos, q = pos + lits;
                    for (; k + 2 <= q; k += 2) PUT_PAIR(pk + k);
                    if (k < q) PUT_CODE(lit_code[pk[k]]);
                    pos = q;
                    if (pos >= plen) break;
                    size_t run = (size_t)__builtin_ctzll(~(m >> pos));
                    uint32_t lc = len_code[run];
                    PUT_BITS((uint64_t)(lc & 0xFFFFFF) | ((uint64_t)(dcode & 0xFFFFFF) << (lc >> 24)), (lc >> 24) + (dcode >> 24));
                    pos += run;
                }
            }
        } else {
            size_t k = 0;
            for (; k + 2 <= plen; k += 2) PUT_PAIR(pk + k);
            if (k < plen) PUT_CODE(lit_code[pk[k]]);
        }
        at += plen;
    }
    if (at == 0) return 0;
    PUT_CODE(lit_code[256]);                   // end of block
    if (nb > 0) *op++ = (uint8_t)acc;
    uint32_t a = isal_adler32(1, in, at);
    op[0] = (uint8_t)(a >> 24); op[1] = (uint8_t)(a >> 16); op[2] = (uint8_t)(a >> 8); op[3] = (uint8_t)a;
    op += 4;
    *consumed = at;
    return (size_t)(op - out);
}
