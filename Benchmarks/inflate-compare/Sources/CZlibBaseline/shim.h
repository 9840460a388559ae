#include <zlib.h>
static inline int baseline_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
