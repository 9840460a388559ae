#ifndef SALVO_CLLHTTP_SHIM_H
#define SALVO_CLLHTTP_SHIM_H
#include <llhttp.h>
#endif
