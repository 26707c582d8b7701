// The system zlib (Debian: zlib1g-dev) for the Perfetto export's `compressed_packets`
// (Sources/RLAnalysis/Renderers/PerfettoDeflater.swift). `deflateInit` is a macro Swift cannot
// call: a function of our own calls it.
#include <zlib.h>

static inline int rl_deflate_init(z_streamp stream, int level) {
    return deflateInit(stream, level);
}
