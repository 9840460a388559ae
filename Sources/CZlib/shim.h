// zlib for Salvo's content decoding, with the init macros Swift cannot call wrapped.
#ifndef SALVO_CZLIB_SHIM_H
#define SALVO_CZLIB_SHIM_H
#include <zlib.h>

static inline int salvo_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
static inline int salvo_deflateInit2(z_streamp stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
#endif
