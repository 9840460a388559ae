// The C seam of Salvo: Linux constants and helpers that Swift cannot import as written
// (macros, enum-typed flags, errno as a thread-local lvalue). Nothing above this module
// spells a C macro by hand.
#ifndef SALVO_CSALVO_H
#define SALVO_CSALVO_H

#include <stdint.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <malloc.h>
#include <string.h>

struct bio_st;

/// A socket BIO for OpenSSL over `fd` that writes with MSG_NOSIGNAL (tls_bio.c), so that a
/// peer's reset never raises SIGPIPE. The descriptor stays the caller's. NULL on failure.
struct bio_st *salvo_bio_new_socket(int fd);

static const uint32_t salvo_EPOLLIN = EPOLLIN;
static const uint32_t salvo_EPOLLOUT = EPOLLOUT;
static const uint32_t salvo_EPOLLERR = EPOLLERR;
static const uint32_t salvo_EPOLLHUP = EPOLLHUP;
static const uint32_t salvo_EPOLLRDHUP = EPOLLRDHUP;

static const int salvo_SOCK_STREAM_NONBLOCK_CLOEXEC = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
static const int salvo_EFD_NONBLOCK_CLOEXEC = EFD_NONBLOCK | EFD_CLOEXEC;
static const int salvo_MSG_NOSIGNAL = MSG_NOSIGNAL;

static inline int salvo_errno(void) { return errno; }

/// Names the calling thread (visible in top, perf and gdb); at most 15 bytes are kept.
static inline void salvo_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/// Returns freed heap memory to the system (for memory measurements).
static inline void salvo_malloc_trim(void) { malloc_trim(0); }

/// Bytes of heap in use (allocated and not freed), all arenas (for memory measurements).
static inline size_t salvo_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

/// epoll_event is packed on x86_64; these accessors keep Swift away from its layout.
static inline void salvo_epoll_event_set(struct epoll_event *ev, uint32_t events, uint64_t data) {
    ev->events = events;
    ev->data.u64 = data;
}
static inline uint32_t salvo_epoll_event_events(const struct epoll_event *ev) { return ev->events; }
static inline uint64_t salvo_epoll_event_data(const struct epoll_event *ev) { return ev->data.u64; }

/// send(2) that never raises SIGPIPE on a peer that went away.
static inline ssize_t salvo_send(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

/// writev through sendmsg, for MSG_NOSIGNAL.
static inline ssize_t salvo_sendv(int fd, const struct iovec *iov, int iovcnt) {
    struct msghdr msg = {0};
    msg.msg_iov = (struct iovec *)iov;
    msg.msg_iovlen = (size_t)iovcnt;
    return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

#endif
