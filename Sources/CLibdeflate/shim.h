// libdeflate (Debian: libdeflate-dev) for the Perfetto export's `compressed_packets`
// (Sources/RLAnalysis/Renderers/PerfettoDeflater.swift): zlib-format streams, at 2.3× zlib's own
// speed at level 1 on the export (docs/benchmarks.md, "The Perfetto export").
#include <libdeflate.h>
