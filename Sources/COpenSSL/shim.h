// OpenSSL for Salvo's TLS, with the macros Swift cannot call wrapped as functions.
#ifndef SALVO_COPENSSL_SHIM_H
#define SALVO_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

static inline long salvo_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int salvo_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int salvo_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long salvo_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline void salvo_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    SSL_CTX_set_read_ahead(ctx, yes);
}
static inline long salvo_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static const int salvo_TLS1_2_VERSION = TLS1_2_VERSION;
static const int salvo_TLS1_3_VERSION = TLS1_3_VERSION;
static const long salvo_SSL_MODE_PARTIAL_WRITE = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
static const int salvo_SSL_VERIFY_PEER = SSL_VERIFY_PEER;
static const int salvo_SSL_VERIFY_NONE = SSL_VERIFY_NONE;
static const int salvo_SSL_ERROR_WANT_READ = SSL_ERROR_WANT_READ;
static const int salvo_SSL_ERROR_WANT_WRITE = SSL_ERROR_WANT_WRITE;
static const int salvo_SSL_ERROR_ZERO_RETURN = SSL_ERROR_ZERO_RETURN;
static const int salvo_SSL_ERROR_SYSCALL = SSL_ERROR_SYSCALL;
static const int salvo_SSL_ERROR_SSL = SSL_ERROR_SSL;
static const int salvo_X509_V_OK = X509_V_OK;
static const unsigned int salvo_X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS = X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS;
static const long salvo_SSL_OP_IGNORE_UNEXPECTED_EOF = 0;

/// base64(SHA-256(DER SubjectPublicKeyInfo)) of the peer's certificate into `out` (at least
/// 45 bytes); returns its length, or 0 when there is no peer certificate.
static inline int salvo_peer_spki_sha256_base64(SSL *ssl, unsigned char *out) {
    X509 *cert = SSL_get1_peer_certificate(ssl);
    if (cert == NULL) return 0;
    unsigned char *der = NULL;
    int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
    X509_free(cert);
    if (length <= 0) return 0;
    unsigned char digest[32];
    unsigned int digest_length = 0;
    int ok = EVP_Digest(der, (size_t)length, digest, &digest_length, EVP_sha256(), NULL);
    OPENSSL_free(der);
    if (!ok) return 0;
    return EVP_EncodeBlock(out, digest, (int)digest_length);
}

/// Whether the last error on this thread's queue is OpenSSL 3's "unexpected EOF": the peer
/// closed without close_notify.
static inline int salvo_ssl_error_is_unexpected_eof(unsigned long err) {
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
    return ERR_GET_LIB(err) == ERR_LIB_SSL && ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
#else
    return 0;
#endif
}
#endif
