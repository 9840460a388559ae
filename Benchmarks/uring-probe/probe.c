// The kernel's share of a load generator's request, measured over three I/O paths with
// everything else held equal: one thread, C keep-alive connections in a closed loop (each
// sends its next GET when the last response is whole), the same minimal response framing.
//
//   epoll      non-blocking sockets, epoll_wait, recv and send per request (what salvo bench does)
//   uring      io_uring: a recv and a send per request as submissions, all of one pass submitted
//              together with the wait (one system call per pass), registered files
//   uring-ms   the same with one multishot recv per connection into a ring of provided buffers
//              (no recv submission per request)
//
// usage: probe MODE HOST PORT PATH CONNECTIONS SECONDS
// prints one line: mode, requests, seconds, user and system CPU microseconds per request.
// A measuring tool for docs/performance.md, not part of Salvo; see Benchmarks/uring-probe/README.md.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

enum { BUFFER = 16384, RING_BUFFERS = 1024, BUFFER_GROUP = 1 };

typedef struct {
    int fd;
    char buffer[BUFFER];
    size_t have;
} Connection;

static char request[512];
static size_t request_length;
static long long completed;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

// The value of the field `name` (lowercase, with its colon) in the head `head[0..<length]`,
// matched at the start of a line in any case; NULL when absent.
static const char *field(const char *head, size_t length, const char *name) {
    size_t n = strlen(name);
    for (const char *line = head; line && line < head + length;) {
        if ((size_t)(head + length - line) > n && strncasecmp(line, name, n) == 0) return line + n;
        const char *next = memmem(line, (size_t)(head + length - line), "\r\n", 2);
        line = next ? next + 2 : NULL;
    }
    return NULL;
}

// Consumes whole responses at the front of `c`'s buffer; returns how many. Only responses
// framed by Content-Length are understood (what the test nginx sends): anything else stops
// the run with a message rather than be miscounted.
static int take_responses(Connection *c) {
    int count = 0;
    for (;;) {
        char *end = memmem(c->buffer, c->have, "\r\n\r\n", 4);
        if (!end) {
            if (c->have == BUFFER) { fprintf(stderr, "a response head over %d bytes\n", BUFFER); exit(2); }
            return count;
        }
        size_t head = (size_t)(end - c->buffer) + 4;
        const char *length = field(c->buffer, head, "content-length:");
        if (!length || field(c->buffer, head, "transfer-encoding:")) {
            fprintf(stderr, "a response without Content-Length: the probe frames only those\n");
            exit(2);
        }
        size_t body = strtoul(length, NULL, 10);
        if (head + body > BUFFER) { fprintf(stderr, "a response over %d bytes: use a smaller path\n", BUFFER); exit(2); }
        if (c->have < head + body) return count;
        memmove(c->buffer, c->buffer + head + body, c->have - head - body);
        c->have -= head + body;
        count++;
    }
}

static int connect_to(const char *host, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void run_epoll(Connection *cs, int n, double until) {
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        fcntl(cs[i].fd, F_SETFL, O_NONBLOCK);
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (unsigned)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &e);
        if (send(cs[i].fd, request, request_length, MSG_NOSIGNAL) != (ssize_t)request_length) die("send");
    }
    struct epoll_event events[256];
    while (now_seconds() < until) {
        int ready = epoll_wait(ep, events, 256, 100);
        for (int k = 0; k < ready; k++) {
            Connection *c = &cs[events[k].data.u32];
            ssize_t got = recv(c->fd, c->buffer + c->have, BUFFER - c->have, 0);
            if (got <= 0) {
                if (got < 0 && errno == EAGAIN) continue;
                die("recv");
            }
            c->have += (size_t)got;
            int done = take_responses(c);
            completed += done;
            if (done > 0 && send(c->fd, request, request_length, MSG_NOSIGNAL) != (ssize_t)request_length) die("send");
        }
    }
}

// user_data: connection index in the low 32 bits, the operation above them.
enum { OP_RECV = 1, OP_SEND = 2 };
static unsigned long long tag(int op, int i) { return ((unsigned long long)op << 32) | (unsigned)i; }

static struct io_uring_sqe *sqe_of(struct io_uring *ring) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        io_uring_submit(ring);
        sqe = io_uring_get_sqe(ring);
        if (!sqe) die("io_uring_get_sqe");
    }
    return sqe;
}

static void queue_send(struct io_uring *ring, int i) {
    struct io_uring_sqe *sqe = sqe_of(ring);
    io_uring_prep_send(sqe, i, request, request_length, MSG_NOSIGNAL);
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, tag(OP_SEND, i));
}

static void queue_recv(struct io_uring *ring, Connection *c, int i) {
    struct io_uring_sqe *sqe = sqe_of(ring);
    io_uring_prep_recv(sqe, i, c->buffer + c->have, BUFFER - c->have, 0);
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, tag(OP_RECV, i));
}

static void queue_multishot(struct io_uring *ring, int i) {
    struct io_uring_sqe *sqe = sqe_of(ring);
    io_uring_prep_recv_multishot(sqe, i, NULL, 0, 0);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUFFER_GROUP;
    io_uring_sqe_set_data64(sqe, tag(OP_RECV, i));
}

static void run_uring(Connection *cs, int n, double until, int multishot) {
    struct io_uring ring;
    struct io_uring_params params = {0};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(1024, &ring, &params) != 0) {
        memset(&params, 0, sizeof params);
        params.flags = IORING_SETUP_COOP_TASKRUN;
        if (io_uring_queue_init_params(1024, &ring, &params) != 0) die("io_uring_queue_init");
        fprintf(stderr, "io_uring: SINGLE_ISSUER|DEFER_TASKRUN refused, running with COOP_TASKRUN\n");
    }
    int fds[n];
    for (int i = 0; i < n; i++) fds[i] = cs[i].fd;
    if (io_uring_register_files(&ring, fds, (unsigned)n) != 0) die("io_uring_register_files");

    struct io_uring_buf_ring *buffers = NULL;
    char *pool = NULL;
    if (multishot) {
        size_t ring_size = RING_BUFFERS * sizeof(struct io_uring_buf);
        buffers = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        if (buffers == MAP_FAILED) die("mmap");
        io_uring_buf_ring_init(buffers);
        struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)buffers, .ring_entries = RING_BUFFERS, .bgid = BUFFER_GROUP};
        if (io_uring_register_buf_ring(&ring, &reg, 0) != 0) die("io_uring_register_buf_ring");
        pool = malloc((size_t)RING_BUFFERS * 2048);
        for (int b = 0; b < RING_BUFFERS; b++)
            io_uring_buf_ring_add(buffers, pool + (size_t)b * 2048, 2048, (unsigned short)b, io_uring_buf_ring_mask(RING_BUFFERS), b);
        io_uring_buf_ring_advance(buffers, RING_BUFFERS);
    }
    for (int i = 0; i < n; i++) {
        if (multishot) queue_multishot(&ring, i); else queue_recv(&ring, &cs[i], i);
        queue_send(&ring, i);
    }
    struct io_uring_cqe *cqes[256];
    while (now_seconds() < until) {
        // One system call a pass: what the last pass queued goes out, and the wait begins.
        struct __kernel_timespec timeout = {.tv_sec = 0, .tv_nsec = 100000000};
        struct io_uring_cqe *first;
        int rc = io_uring_submit_and_wait_timeout(&ring, &first, 1, &timeout, NULL);
        if (rc < 0 && rc != -ETIME && rc != -EINTR) { errno = -rc; die("io_uring_submit_and_wait"); }
        unsigned got = io_uring_peek_batch_cqe(&ring, cqes, 256);
        int returned = 0;
        for (unsigned k = 0; k < got; k++) {
            struct io_uring_cqe *cqe = cqes[k];
            unsigned long long data = io_uring_cqe_get_data64(cqe);
            int i = (int)(data & 0xffffffffu), op = (int)(data >> 32);
            Connection *c = &cs[i];
            if (op == OP_SEND) {
                if (cqe->res != (int)request_length) { errno = -cqe->res; die("send"); }
                continue;
            }
            if (cqe->res <= 0) {
                if (cqe->res == -ENOBUFS && multishot) { queue_multishot(&ring, i); continue; }
                errno = -cqe->res;
                die("recv");
            }
            if (multishot) {
                unsigned b = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
                if (c->have + (size_t)cqe->res > BUFFER) { fprintf(stderr, "more than %d bytes unread\n", BUFFER); exit(2); }
                memcpy(c->buffer + c->have, pool + (size_t)b * 2048, (size_t)cqe->res);
                io_uring_buf_ring_add(buffers, pool + (size_t)b * 2048, 2048, (unsigned short)b, io_uring_buf_ring_mask(RING_BUFFERS), returned++);
                c->have += (size_t)cqe->res;
                if (!(cqe->flags & IORING_CQE_F_MORE)) queue_multishot(&ring, i);
            } else {
                c->have += (size_t)cqe->res;
            }
            int done = take_responses(c);
            completed += done;
            if (!multishot) queue_recv(&ring, c, i);
            if (done > 0) queue_send(&ring, i);
        }
        if (returned) io_uring_buf_ring_advance(buffers, returned);
        io_uring_cq_advance(&ring, got);
    }
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s epoll|uring|uring-ms HOST PORT PATH CONNECTIONS SECONDS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *host = argv[2], *path = argv[4];
    int port = atoi(argv[3]), n = atoi(argv[5]);
    double seconds = atof(argv[6]);
    if (n < 1 || n > 4096 || seconds <= 0) return 2;
    request_length = (size_t)snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", path, host, port);
    Connection *cs = calloc((size_t)n, sizeof *cs);
    for (int i = 0; i < n; i++) cs[i].fd = connect_to(host, port);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    double start = now_seconds();
    if (strcmp(mode, "epoll") == 0) run_epoll(cs, n, start + seconds);
    else if (strcmp(mode, "uring") == 0) run_uring(cs, n, start + seconds, 0);
    else if (strcmp(mode, "uring-ms") == 0) run_uring(cs, n, start + seconds, 1);
    else return 2;
    double elapsed = now_seconds() - start;
    getrusage(RUSAGE_SELF, &after);
    double user = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e6 + (after.ru_utime.tv_usec - before.ru_utime.tv_usec);
    double sys = (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e6 + (after.ru_stime.tv_usec - before.ru_stime.tv_usec);
    printf("%s requests %lld seconds %.2f req/s %.0f user_us/req %.3f sys_us/req %.3f\n", mode, completed, elapsed,
           completed / elapsed, user / (double)completed, sys / (double)completed);
    return 0;
}
