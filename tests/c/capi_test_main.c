/* Entry point of the C API suite and its small helpers.
 * Usage: capi_test [--without-avx512]
 * --without-avx512: the process runs with ONEDNN_MAX_CPU_ISA=AVX2 (set by CTest); additionally
 * checks that bf16 problems run there on no bf16 kernel. */
#define _POSIX_C_SOURCE 200809L
#include "capi_test.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* name occurs in msg as a whole identifier: "src" is not found in "diff_src". */
static int has_identifier(const char *msg, const char *name) {
    size_t len = strlen(name);
    for (const char *p = strstr(msg, name); p; p = strstr(p + 1, name)) {
        if (p > msg && is_ident_char(p[-1])) continue;
        if (is_ident_char(name[len - 1]) && is_ident_char(p[len])) continue;
        return 1;
    }
    return 0;
}

/* One alternative list ("a|b"): non-zero when msg contains one of them. */
static int has_one_of(const char *msg, const char *alts, size_t alts_len) {
    const char *end = alts + alts_len;
    while (alts < end) {
        const char *bar = memchr(alts, '|', (size_t)(end - alts));
        size_t len = (size_t)((bar ? bar : end) - alts);
        char buf[128];
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, alts, len);
        buf[len] = '\0';
        if (len > 0 && has_identifier(msg, buf)) return 1;
        alts += len + 1;
    }
    return 0;
}

int message_has_field(const char *msg, const char *fields) {
    /* ',' separates names that must all be present; '|' separates alternatives. */
    while (*fields) {
        size_t len = strcspn(fields, ",");
        if (!has_one_of(msg, fields, len)) return 0;
        fields += len;
        if (*fields == ',') fields++;
    }
    return 1;
}

int message_has_value(const char *msg, const char *value) {
    size_t len = strlen(value);
    for (const char *p = strstr(msg, value); p; p = strstr(p + 1, value)) {
        char before = p == msg ? ' ' : p[-1];
        char after = p[len];
        if (isdigit((unsigned char)before) || before == '-' || before == '[') continue;
        if (isdigit((unsigned char)after) || after == ']') continue;
        return 1;
    }
    return 0;
}

int check_message(const char *what, const char *fields, const char *value) {
    const char *msg = deconv_last_error();
    if (!msg) {
        print_error("%s: deconv_last_error() returned NULL\n", what);
        return 1;
    }
    int problems = 0;
    if (fields && !message_has_field(msg, fields)) {
        print_error("%s: message \"%s\" does not name %s\n", what, msg, fields);
        problems++;
    }
    if (value && !message_has_value(msg, value)) {
        print_error("%s: message \"%s\" does not contain the value %s\n", what, msg, value);
        problems++;
    }
    return problems;
}

int check_failure(const char *what, deconv_status got, deconv_status want, const char *fields,
                  const char *value) {
    if (got != want) {
        const char *msg = deconv_last_error();
        print_error("%s: status %s, expected %s (message: \"%s\")\n", what,
                    deconv_status_string(got), deconv_status_string(want), msg ? msg : "(null)");
        return 1; /* the message of a wrong status says nothing useful */
    }
    return check_message(what, fields, value);
}

int floats_close(const float *got, const float *want, size_t n, float tol) {
    for (size_t i = 0; i < n; i++) {
        float err = fabsf(got[i] - want[i]);
        if (!(err <= tol * (1.0f + fabsf(want[i])))) {
            print_error("element %zu: got %g, expected %g\n", i, (double)got[i], (double)want[i]);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    int without_avx512 = argc > 1 && strcmp(argv[1], "--without-avx512") == 0;
    if (argc > 1 && !without_avx512) {
        fprintf(stderr, "usage: %s [--without-avx512]\n", argv[0]);
        return 2;
    }
    int failed = 0;
    failed += _cmocka_run_group_tests("api", api_tests, api_test_count, NULL, NULL);

    struct CMUnitTest *tests = NULL;
    size_t n = invalid_params_tests(&tests);
    failed += _cmocka_run_group_tests("invalid_params", tests, n, NULL, NULL);
    free(tests);

    n = invalid_calls_tests(&tests);
    failed += _cmocka_run_group_tests("invalid_calls", tests, n, invalid_calls_setup,
                                      invalid_calls_teardown);
    free(tests);

    if (without_avx512) {
        const struct CMUnitTest bf16_tests[] = {
            cmocka_unit_test(test_bf16_in_f32_on_avx2_cpu),
        };
        failed += cmocka_run_group_tests_name("without_avx512", bf16_tests, NULL, NULL);
    }
    return failed == 0 ? 0 : 1;
}

void params_base(deconv_params *p) {
    deconv_params_init(p);
    p->rank = 2;
    p->batch = 2;
    p->in_channels = 4;
    p->out_channels = 6;
    p->groups = 2;
    const int64_t in[2] = {5, 4}, k[2] = {3, 2}, s[2] = {2, 3}, pad[2] = {1, 0}, adj[2] = {1, 2};
    for (int i = 0; i < 2; i++) {
        p->in_size[i] = in[i];
        p->kernel[i] = k[i];
        p->stride[i] = s[i];
        p->pad[i] = pad[i];
        p->adj[i] = adj[i];
    }
}
