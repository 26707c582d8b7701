// Intel's ISA-L igzip (Debian: libisal-dev) for the Perfetto export's `compressed_packets`
// (Sources/RLAnalysis/Renderers/PerfettoDeflater.swift): zlib-format streams at level 1, 1.9×
// libdeflate's speed and 4.5× zlib's on the export (docs/benchmarks.md, "The Perfetto export").
// The helpers below wrap igzip's one-shot (stateless) deflate, whose sizes are C macros.
#include <stdint.h>
#include <string.h>
#include <isa-l/igzip_lib.h>

/// The work buffer level 1 needs (ISAL_DEF_LVL1_DEFAULT bytes).
static inline uint32_t rl_isal_level1_buffer_size(void) { return ISAL_DEF_LVL1_DEFAULT; }

/// Deflates `in` into one zlib stream at level 1 in `out`; returns its size, or 0 if it does not
/// fit `out_capacity` or igzip fails. `level_buffer` holds rl_isal_level1_buffer_size() bytes.
static inline uint32_t rl_isal_zlib_compress(const uint8_t *in, uint32_t in_size, uint8_t *out, uint32_t out_capacity,
                                             uint8_t *level_buffer) {
    struct isal_zstream s;
    isal_deflate_stateless_init(&s);
    s.level = 1;
    s.level_buf = level_buffer;
    s.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
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
