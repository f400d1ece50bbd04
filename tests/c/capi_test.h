/* Shared helpers of the CMocka suite of the libdeconv C API. */
#ifndef CAPI_TEST_H
#define CAPI_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deconv.h"

/* A handle value the library never returns: a failed create must leave it in place. */
#define SENTINEL_HANDLE ((deconv *)(uintptr_t)0x5e5e5e5eu)
/* Output buffers are filled with this byte before a call that must fail. */
#define SENTINEL_BYTE 0xA5

/* Non-zero when msg names the fields, each as a whole identifier ("src" is not found in
 * "diff_src"): ',' separates names that must all be present, '|' alternatives of which one
 * suffices ("groups,in_channels", "in_size|src"). */
int message_has_field(const char *msg, const char *fields);
/* Non-zero when msg contains value as a whole decimal number (not an index like "[0]",
 * not part of a longer number or of a negative one). */
int message_has_value(const char *msg, const char *value);

/* Checks that deconv_last_error() names the fields (as message_has_field; NULL: no check)
 * and contains the value (NULL: no check). Prints what is wrong, prefixed by `what`, and
 * returns the number of problems found (0 = as expected). */
int check_message(const char *what, const char *fields, const char *value);
/* check_message after checking the status of a failed call. */
int check_failure(const char *what, deconv_status got, deconv_status want, const char *fields,
                  const char *value);
#define assert_failure(call, want, fields, value) \
    assert_int_equal(check_failure(#call, (call), (want), (fields), (value)), 0)

/* Element-wise comparison with absolute+relative tolerance; prints the first mismatch. */
int floats_close(const float *got, const float *want, size_t n, float tol);

/* The problem the invalid-parameter table mutates, valid as it is: 2D, batch 2, 4 -> 6
 * channels in 2 groups, in (5,4), kernel (3,2), stride (2,3), pad (1,0), adj (1,2), bias;
 * output (10,13). */
void params_base(deconv_params *p);

/* Test lists and groups. */
extern const struct CMUnitTest api_tests[];
extern const size_t api_test_count;
/* Builds the table-driven tests (malloc'ed array, one test per bad input). */
size_t invalid_params_tests(struct CMUnitTest **tests);
size_t invalid_calls_tests(struct CMUnitTest **tests);
int invalid_calls_setup(void **state);
int invalid_calls_teardown(void **state);
/* Only for the run under ONEDNN_MAX_CPU_ISA=AVX2. */
void test_bf16_in_f32_on_avx2_cpu(void **state);

#endif
