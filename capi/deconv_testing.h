/* Test-only controls, present in libdeconv builds configured with DECONV_FAULT_INJECTION=ON
 * (the sanitizer build); not installed, not part of the ABI. */
#ifndef DECONV_TESTING_H
#define DECONV_TESTING_H

#include "deconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The nth allocation the library makes from now on fails (as if out of memory); 0 turns it off. */
DECONV_EXPORT void deconv_testing_fail_allocation(int64_t nth);
/* Non-zero when the armed failure has happened. */
DECONV_EXPORT int deconv_testing_allocation_failed(void);

#ifdef __cplusplus
}
#endif

#endif
