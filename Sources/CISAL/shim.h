// Intel's ISA-L igzip (Debian: libisal-dev) for the Perfetto export's `compressed_packets` that
// are not buffers of whole packets (Sources/RLAnalysis/Renderers/PerfettoDeflater.swift; those
// go to Sources/CPacketDeflate): zlib-format streams at igzip's level 0, its fastest — 2.3×
// libdeflate's level 1 and 5.4× zlib's on the export, at 1/3.35 of the packets' size
// (docs/benchmarks.md, "The Perfetto export"). The helper below wraps igzip's one-shot
// (stateless) deflate, whose settings are C macros and struct fields.
#include <stdint.h>
#include <string.h>
#include <isa-l/igzip_lib.h>

/// Deflates `in` into one zlib stream at igzip's level 0 (which needs no level buffer) in `out`;
/// returns its size, or 0 if it does not fit `out_capacity` or igzip fails.
static inline uint32_t rl_isal_zlib_compress(const uint8_t *in, uint32_t in_size, uint8_t *out, uint32_t out_capacity) {
    struct isal_zstream s;
    isal_deflate_stateless_init(&s);
    s.level = 0;
    s.level_buf = NULL;
    s.level_buf_size = ISAL_DEF_LVL0_DEFAULT;
    s.gzip_flag = IGZIP_ZLIB;
    s.next_in = (uint8_t *)in;
    s.avail_in = in_size;
    s.next_out = out;
    s.avail_out = out_capacity;
    s.end_of_stream = 1;
    s.flush = NO_FLUSH;
    if (isal_deflate_stateless(&s) != COMP_OK) return 0;
    return s.total_out;
}
