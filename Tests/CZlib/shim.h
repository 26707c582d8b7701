// zlib (Debian zlib1g-dev), the inflater Perfetto's trace processor uses: the tests' oracle for the
// Perfetto export's deflated runs (Tests/RLAnalysisTests/PerfettoDeflaterTests.swift), independent
// of the igzip that writes them.
#include <zlib.h>
