// CSalvo is header-only; this file gives SwiftPM a C target to compile.
#include "CSalvo.h"
