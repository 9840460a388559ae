// nghttp2 (libnghttp2-dev): HTTP/2 framing, HPACK and flow control for the engine's HTTP/2
// connections. Debian 12's 1.52.0-1+deb12u2 and later carry the fix for CVE-2024-28182.
#include <nghttp2/nghttp2.h>
