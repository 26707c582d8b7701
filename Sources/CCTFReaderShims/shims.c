// CTFReader's C helpers are inline functions in include/CCTFReaderShims.h; SwiftPM needs a source file.
#include "CCTFReaderShims.h"
