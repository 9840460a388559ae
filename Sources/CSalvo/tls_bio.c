// A socket BIO for OpenSSL that never raises SIGPIPE.
//
// OpenSSL's own socket BIO (what SSL_set_fd installs) writes with write(2). When the peer
// has reset the connection, that write raises SIGPIPE, whose default action ends the whole
// process: a close_notify sent to a load balancer's reset, or a request body written to a
// server that already gave up, would kill the program embedding Salvo. This BIO writes with
// send(..., MSG_NOSIGNAL) instead, so the failure comes back as EPIPE, and otherwise behaves
// as the socket BIO does: retry flags on EAGAIN, the EOF flag on a zero read (which OpenSSL 3
// uses to report a close without close_notify), and no ownership of the descriptor.
#include "CSalvo.h"

#include <openssl/bio.h>
#include <pthread.h>
#include <stdint.h>

static BIO_METHOD *salvo_socket_method = NULL;
static pthread_once_t salvo_socket_method_once = PTHREAD_ONCE_INIT;

static int salvo_bio_fd(BIO *bio) { return (int)(intptr_t)BIO_get_data(bio); }

static int salvo_bio_retriable(int err) {
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == EINPROGRESS;
}

static int salvo_bio_write(BIO *bio, const char *data, int length) {
    BIO_clear_retry_flags(bio);
    ssize_t n = send(salvo_bio_fd(bio), data, (size_t)length, MSG_NOSIGNAL);
    if (n < 0 && salvo_bio_retriable(errno)) BIO_set_retry_write(bio);
    return (int)n;
}

static int salvo_bio_read(BIO *bio, char *data, int length) {
    if (data == NULL) return 0;
    BIO_clear_retry_flags(bio);
    ssize_t n = read(salvo_bio_fd(bio), data, (size_t)length);
    if (n == 0) {
        BIO_set_flags(bio, BIO_FLAGS_IN_EOF);
    } else if (n < 0 && salvo_bio_retriable(errno)) {
        BIO_set_retry_read(bio);
    }
    return (int)n;
}

static int salvo_bio_puts(BIO *bio, const char *text) {
    return salvo_bio_write(bio, text, (int)strlen(text));
}

static long salvo_bio_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    switch (command) {
    case BIO_C_GET_FD:
        if (pointer != NULL) *(int *)pointer = salvo_bio_fd(bio);
        return salvo_bio_fd(bio);
    case BIO_CTRL_EOF:
        return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0;
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_GET_CLOSE:
        return BIO_NOCLOSE;
    default:
        return 0;
    }
}

static int salvo_bio_create(BIO *bio) {
    BIO_set_data(bio, (void *)(intptr_t)-1);
    BIO_set_init(bio, 0);
    return 1;
}

static int salvo_bio_destroy(BIO *bio) {
    // The descriptor belongs to the connection, which closes it.
    (void)bio;
    return 1;
}

static void salvo_bio_make_method(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                      "salvo socket");
    if (method == NULL) return;
    if (!BIO_meth_set_write(method, salvo_bio_write) || !BIO_meth_set_read(method, salvo_bio_read)
        || !BIO_meth_set_puts(method, salvo_bio_puts) || !BIO_meth_set_ctrl(method, salvo_bio_ctrl)
        || !BIO_meth_set_create(method, salvo_bio_create) || !BIO_meth_set_destroy(method, salvo_bio_destroy)) {
        BIO_meth_free(method);
        return;
    }
    salvo_socket_method = method;
}

struct bio_st *salvo_bio_new_socket(int fd) {
    pthread_once(&salvo_socket_method_once, salvo_bio_make_method);
    if (salvo_socket_method == NULL) return NULL;
    BIO *bio = BIO_new(salvo_socket_method);
    if (bio == NULL) return NULL;
    BIO_set_data(bio, (void *)(intptr_t)fd);
    BIO_set_init(bio, 1);
    return bio;
}
