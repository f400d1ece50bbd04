/* Every function of the C API used successfully, with small hand-derivable numbers. */
#define _POSIX_C_SOURCE 200809L
#include "capi_test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---------------------------------------------------------------- params and shapes */

static void test_params_init_defaults(void **state) {
    (void)state;
    deconv_params p;
    memset(&p, SENTINEL_BYTE, sizeof p);
    assert_int_equal(deconv_params_init(&p), DECONV_OK);
    assert_int_equal(p.struct_size, sizeof(deconv_params));
    assert_int_equal(p.rank, 2);
    assert_int_equal(p.batch, 1);
    assert_int_equal(p.in_channels, 1);
    assert_int_equal(p.out_channels, 1);
    assert_int_equal(p.groups, 1);
    for (int i = 0; i < DECONV_MAX_RANK; i++) {
        assert_int_equal(p.in_size[i], 1);
        assert_int_equal(p.kernel[i], 1);
        assert_int_equal(p.stride[i], 1);
        assert_int_equal(p.pad[i], 0);
        assert_int_equal(p.dilate[i], 1);
        assert_int_equal(p.adj[i], 0);
        assert_int_equal(p.target_shape[i], 0);
    }
    assert_int_equal(p.no_bias, 0);
    assert_int_equal(p.dtype, DECONV_F32);
    assert_int_equal(p.layout, DECONV_CHANNELS_FIRST);
    assert_int_equal(p.mode, DECONV_INFERENCE);
}

typedef struct shape_case {
    const char *desc;
    int32_t rank;
    /* Zero entries of stride and dilate mean the default 1. */
    int64_t in[3], kernel[3], stride[3], pad[3], dilate[3], adj[3], target[3];
    int64_t want[3];
} shape_case;

static const shape_case shape_cases[] = {
    {"MXNet 2D: target (8,8) overrides pad 99, adj 101", 2, {4, 4}, {3, 3}, {2, 2}, {99, 99},
     {0}, {101, 101}, {8, 8}, {8, 8}},
    {"MXNet 2D: pad 1, adj 1", 2, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {0}, {1, 1}, {0}, {8, 8}},
    {"MXNet 1D: target 8 overrides pad 99, adj 101", 1, {4}, {3}, {2}, {99}, {0}, {101}, {8},
     {8}},
    {"MXNet 1D: pad 1, adj 1", 1, {4}, {3}, {2}, {1}, {0}, {1}, {0}, {8}},
    {"3D: stride, dilate, pad and adj per dim", 3, {3, 4, 5}, {1, 2, 3}, {1, 2, 3}, {0, 0, 1},
     {1, 1, 2}, {0, 1, 2}, {0}, {3, 9, 17}},
    {"2D: target with odd and zero excess", 2, {5, 5}, {3, 3}, {2, 2}, {0}, {0}, {0}, {10, 11},
     {10, 11}},
    {"1D: input of 2^22, output near 2^23", 1, {(int64_t)1 << 22}, {3}, {2}, {1}, {0}, {0},
     {0}, {((int64_t)1 << 23) - 1}},
};

static void test_output_shape_cases(void **state) {
    (void)state;
    int bad = 0;
    for (size_t c = 0; c < sizeof shape_cases / sizeof shape_cases[0]; c++) {
        const shape_case *sc = &shape_cases[c];
        deconv_params p;
        deconv_params_init(&p);
        p.rank = sc->rank;
        for (int i = 0; i < sc->rank; i++) {
            p.in_size[i] = sc->in[i];
            p.kernel[i] = sc->kernel[i];
            p.stride[i] = sc->stride[i] ? sc->stride[i] : 1;
            p.pad[i] = sc->pad[i];
            p.dilate[i] = sc->dilate[i] ? sc->dilate[i] : 1;
            p.adj[i] = sc->adj[i];
            p.target_shape[i] = sc->target[i];
        }
        int64_t out[DECONV_MAX_RANK] = {-7777, -7777, -7777};
        deconv_status st = deconv_output_shape(&p, out);
        if (st != DECONV_OK) {
            print_error("%s: %s (%s)\n", sc->desc, deconv_status_string(st), deconv_last_error());
            bad++;
            continue;
        }
        for (int i = 0; i < DECONV_MAX_RANK; i++) {
            /* Only the first rank entries are written. */
            int64_t want = i < sc->rank ? sc->want[i] : -7777;
            if (out[i] != want) {
                print_error("%s: out_size[%d] = %lld, expected %lld\n", sc->desc, i,
                            (long long)out[i], (long long)want);
                bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Entries past rank are documented as unused: garbage there must not matter. */
static void test_entries_past_rank_are_ignored(void **state) {
    (void)state;
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 1;
    p.in_size[0] = 6;
    p.kernel[0] = 2;
    for (int i = 1; i < DECONV_MAX_RANK; i++) {
        p.in_size[i] = 0;
        p.kernel[i] = -1;
        p.stride[i] = 0;
        p.pad[i] = -5;
        p.dilate[i] = 0;
        p.adj[i] = 9;
        p.target_shape[i] = 3;
    }
    int64_t out[DECONV_MAX_RANK] = {0};
    assert_int_equal(deconv_output_shape(&p, out), DECONV_OK);
    assert_int_equal(out[0], 7);
    deconv_sizes s;
    assert_int_equal(deconv_buffer_sizes(&p, &s), DECONV_OK);
    assert_int_equal(s.src, 6);
    assert_int_equal(s.dst, 7);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    deconv_destroy(h);
}

static void test_buffer_sizes(void **state) {
    (void)state;
    deconv_params p;
    params_base(&p);
    int64_t out[DECONV_MAX_RANK];
    assert_int_equal(deconv_output_shape(&p, out), DECONV_OK);
    assert_int_equal(out[0], 10);
    assert_int_equal(out[1], 13);

    deconv_sizes s;
    assert_int_equal(deconv_buffer_sizes(&p, &s), DECONV_OK);
    assert_int_equal(s.src, 2 * 4 * 5 * 4);
    assert_int_equal(s.weights, 4 * (6 / 2) * 3 * 2);
    assert_int_equal(s.bias, 6);
    assert_int_equal(s.dst, 2 * 6 * 10 * 13);

    p.no_bias = 1;
    assert_int_equal(deconv_buffer_sizes(&p, &s), DECONV_OK);
    assert_int_equal(s.bias, 0);
    assert_int_equal(s.weights, 72);

    /* Layout, dtype and mode do not change element counts. */
    p.no_bias = 0;
    p.layout = DECONV_CHANNELS_LAST;
    p.dtype = DECONV_BF16;
    p.mode = DECONV_TRAINING;
    assert_int_equal(deconv_buffer_sizes(&p, &s), DECONV_OK);
    assert_int_equal(s.src, 160);
    assert_int_equal(s.weights, 72);
    assert_int_equal(s.bias, 6);
    assert_int_equal(s.dst, 1560);
}

/* A create and destroy for every rank, layout and mode. */
static void test_create_destroy(void **state) {
    (void)state;
    for (int rank = 1; rank <= 3; rank++) {
        for (int layout = 0; layout < 2; layout++) {
            for (int mode = 0; mode < 2; mode++) {
                deconv_params p;
                deconv_params_init(&p);
                p.rank = rank;
                p.batch = 2;
                p.in_channels = 3;
                p.out_channels = 4;
                for (int i = 0; i < rank; i++) {
                    p.in_size[i] = 3;
                    p.kernel[i] = 2;
                    p.stride[i] = 2;
                }
                p.layout = (deconv_layout)layout;
                p.mode = (deconv_mode)mode;
                deconv *h = SENTINEL_HANDLE;
                deconv_status st = deconv_create(&p, &h);
                if (st != DECONV_OK)
                    print_error("rank %d layout %d mode %d: %s\n", rank, layout, mode,
                                deconv_last_error());
                assert_int_equal(st, DECONV_OK);
                assert_non_null(h);
                assert_ptr_not_equal(h, SENTINEL_HANDLE);
                deconv_destroy(h);
            }
        }
    }
    deconv_destroy(NULL); /* a no-op */
}

/* ---------------------------------------------------------------- forward numbers */

/* The 1x1-kernel problem: batch 2, 2 -> 3 channels, 2x2 spatial. A 1x1 deconvolution is a
 * per-pixel matrix product with the (in_channels, out_channels) weights. */
enum { N1 = 2, IC1 = 2, OC1 = 3, HW1 = 4 };
static const float W1[IC1 * OC1] = {1, 2, 3, 4, 5, 6};
static const float B1[OC1] = {0.5f, -1, 2};

static void params_1x1(deconv_params *p, deconv_mode mode, int no_bias) {
    deconv_params_init(p);
    p->batch = N1;
    p->in_channels = IC1;
    p->out_channels = OC1;
    p->in_size[0] = 2;
    p->in_size[1] = 2;
    p->mode = mode;
    p->no_bias = no_bias;
}

static void src_1x1(float src[N1 * IC1 * HW1]) {
    for (int i = 0; i < N1 * IC1 * HW1; i++) src[i] = (float)(i + 1);
}

/* Channels-first expected output of the 1x1 problem. */
static void want_1x1(const float *src, const float *w, const float *b, float *dst) {
    for (int n = 0; n < N1; n++)
        for (int oc = 0; oc < OC1; oc++)
            for (int s = 0; s < HW1; s++) {
                float acc = b ? b[oc] : 0.0f;
                for (int ic = 0; ic < IC1; ic++)
                    acc += src[(n * IC1 + ic) * HW1 + s] * w[ic * OC1 + oc];
                dst[(n * OC1 + oc) * HW1 + s] = acc;
            }
}

/* Channels-first (N, C, HW) to channels-last (N, HW, C). */
static void to_channels_last(const float *cf, float *cl, int n, int c, int hw) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int s = 0; s < hw; s++) cl[(i * hw + s) * c + j] = cf[(i * c + j) * hw + s];
}

static void test_forward_1x1_write_add_null(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_INFERENCE, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    float src[N1 * IC1 * HW1], want[N1 * OC1 * HW1], dst[N1 * OC1 * HW1], twice[N1 * OC1 * HW1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);

    assert_int_equal(deconv_forward(h, src, W1, B1, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));

    /* ADD onto the result just written doubles it. */
    for (int i = 0; i < N1 * OC1 * HW1; i++) twice[i] = 2 * want[i];
    assert_int_equal(deconv_forward(h, src, W1, B1, dst, DECONV_REQ_ADD), DECONV_OK);
    assert_true(floats_close(dst, twice, N1 * OC1 * HW1, 1e-6f));

    /* NULL leaves the buffer as it is, and the buffer may be NULL. */
    float before[N1 * OC1 * HW1];
    memset(dst, SENTINEL_BYTE, sizeof dst);
    memcpy(before, dst, sizeof dst);
    assert_int_equal(deconv_forward(h, src, W1, B1, dst, DECONV_REQ_NULL), DECONV_OK);
    assert_memory_equal(dst, before, sizeof dst);
    assert_int_equal(deconv_forward(h, src, W1, B1, NULL, DECONV_REQ_NULL), DECONV_OK);
    deconv_destroy(h);
}

static void test_forward_1x1_channels_last(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_INFERENCE, 0);
    p.layout = DECONV_CHANNELS_LAST;
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    float src[N1 * IC1 * HW1], src_cl[N1 * IC1 * HW1], want[N1 * OC1 * HW1];
    float want_cl[N1 * OC1 * HW1], dst[N1 * OC1 * HW1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);
    to_channels_last(src, src_cl, N1, IC1, HW1);
    to_channels_last(want, want_cl, N1, OC1, HW1);
    assert_int_equal(deconv_forward(h, src_cl, W1, B1, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want_cl, N1 * OC1 * HW1, 1e-6f));
    deconv_destroy(h);
}

/* Groups: weights are (in_channels, out_channels / groups); group g maps input channels
 * 2g, 2g+1 to output channels 3g .. 3g+2. */
static void test_forward_1x1_groups(void **state) {
    (void)state;
    enum { IC = 4, OC = 6, G = 2, S = 3 };
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 1;
    p.in_channels = IC;
    p.out_channels = OC;
    p.groups = G;
    p.in_size[0] = S;
    p.no_bias = 1;
    float src[IC * S], w[IC * OC / G], want[OC * S], dst[OC * S];
    for (int i = 0; i < IC * S; i++) src[i] = (float)(i + 1);
    for (int i = 0; i < IC * OC / G; i++) w[i] = (float)(i % 5) - 2;
    for (int g = 0; g < G; g++)
        for (int j = 0; j < OC / G; j++)
            for (int s = 0; s < S; s++) {
                float acc = 0;
                for (int i = 0; i < IC / G; i++) {
                    int ic = g * (IC / G) + i;
                    acc += src[ic * S + s] * w[ic * (OC / G) + j];
                }
                want[(g * (OC / G) + j) * S + s] = acc;
            }
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    assert_int_equal(deconv_forward(h, src, w, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, OC * S, 1e-6f));
    deconv_destroy(h);
}

/* All-ones 3x3 input and 3x3 kernel, pad 1: each output counts the inputs that reach it,
 * (2,3,2) per dim. */
static void test_forward_all_ones_3x3_pad1(void **state) {
    (void)state;
    deconv_params p;
    deconv_params_init(&p);
    p.no_bias = 1;
    for (int i = 0; i < 2; i++) {
        p.in_size[i] = 3;
        p.kernel[i] = 3;
        p.pad[i] = 1;
    }
    float src[9], w[9], dst[9];
    const float want[9] = {4, 6, 4, 6, 9, 6, 4, 6, 4};
    for (int i = 0; i < 9; i++) src[i] = w[i] = 1.0f;
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    assert_int_equal(deconv_forward(h, src, w, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, 9, 1e-6f));
    deconv_destroy(h);
}

/* 1D, kernel 1, stride 2, adj 1: inputs land on even positions, adj adds a zero at the end. */
static void test_forward_1d_stride2_adj1(void **state) {
    (void)state;
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 1;
    p.no_bias = 1;
    p.in_size[0] = 2;
    p.stride[0] = 2;
    p.adj[0] = 1;
    const float src[2] = {3, 5}, w[1] = {2}, want[4] = {6, 0, 10, 0};
    float dst[4];
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    assert_int_equal(deconv_forward(h, src, w, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, 4, 1e-6f));
    deconv_destroy(h);
}

/* 1D in 4, kernel 3, stride 2: the full output is y[2i+k] += x[i] w[k] =
 * {1,10,102,20,203,30,304,40,400}; pad 1 / adj 1 drops the first element. target_shape 8
 * derives the same pad and adj, whatever pad and adj say. */
static void test_forward_target_shape_equals_pad_adj(void **state) {
    (void)state;
    const float src[4] = {1, 2, 3, 4}, w[3] = {1, 10, 100};
    const float want[8] = {10, 102, 20, 203, 30, 304, 40, 400};
    for (int use_target = 0; use_target < 2; use_target++) {
        deconv_params p;
        deconv_params_init(&p);
        p.rank = 1;
        p.no_bias = 1;
        p.in_size[0] = 4;
        p.kernel[0] = 3;
        p.stride[0] = 2;
        if (use_target) {
            p.target_shape[0] = 8;
            p.pad[0] = 99;
            p.adj[0] = 101;
        } else {
            p.pad[0] = 1;
            p.adj[0] = 1;
        }
        float dst[8];
        deconv *h = NULL;
        assert_int_equal(deconv_create(&p, &h), DECONV_OK);
        assert_int_equal(deconv_forward(h, src, w, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
        if (!floats_close(dst, want, 8, 1e-6f)) print_error("with target_shape: %d\n", use_target);
        assert_true(floats_close(dst, want, 8, 1e-6f));
        deconv_destroy(h);
    }
}

static void test_set_weights_then_forward_without_weights(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_INFERENCE, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    float src[N1 * IC1 * HW1], want[N1 * OC1 * HW1], dst[N1 * OC1 * HW1];
    float w[IC1 * OC1], b[OC1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);
    memcpy(w, W1, sizeof w);
    memcpy(b, B1, sizeof b);
    assert_int_equal(deconv_set_weights(h, w, b), DECONV_OK);
    /* The library keeps its own copy: the caller's buffers may change afterwards. */
    for (int i = 0; i < IC1 * OC1; i++) w[i] = 1000;
    for (int i = 0; i < OC1; i++) b[i] = 1000;
    assert_int_equal(deconv_forward(h, src, NULL, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));

    /* Weights passed to forward are used as passed, and do not replace the kept ones. */
    float want_other[N1 * OC1 * HW1];
    want_1x1(src, w, b, want_other);
    assert_int_equal(deconv_forward(h, src, w, b, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want_other, N1 * OC1 * HW1, 1e-6f));
    assert_int_equal(deconv_forward(h, src, NULL, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));
    deconv_destroy(h);

    /* Without bias, set_weights takes bias NULL. */
    params_1x1(&p, DECONV_INFERENCE, 1);
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    want_1x1(src, W1, NULL, want);
    assert_int_equal(deconv_set_weights(h, W1, NULL), DECONV_OK);
    assert_int_equal(deconv_forward(h, src, NULL, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));
    deconv_destroy(h);
}

/* ---------------------------------------------------------------- backward numbers */

/* For the 1x1 problem: diff_src = diff_dst * W^T per pixel, diff_weights[ic][oc] = sum over
 * batch and pixels of src[ic] * diff_dst[oc], diff_bias[oc] = sum of diff_dst[oc]. */
static void want_backward_1x1(const float *src, const float *dd, float *dsrc, float *dw,
                              float *db) {
    for (int n = 0; n < N1; n++)
        for (int ic = 0; ic < IC1; ic++)
            for (int s = 0; s < HW1; s++) {
                float acc = 0;
                for (int oc = 0; oc < OC1; oc++)
                    acc += dd[(n * OC1 + oc) * HW1 + s] * W1[ic * OC1 + oc];
                dsrc[(n * IC1 + ic) * HW1 + s] = acc;
            }
    for (int ic = 0; ic < IC1; ic++)
        for (int oc = 0; oc < OC1; oc++) {
            float acc = 0;
            for (int n = 0; n < N1; n++)
                for (int s = 0; s < HW1; s++)
                    acc += src[(n * IC1 + ic) * HW1 + s] * dd[(n * OC1 + oc) * HW1 + s];
            dw[ic * OC1 + oc] = acc;
        }
    for (int oc = 0; oc < OC1; oc++) {
        float acc = 0;
        for (int n = 0; n < N1; n++)
            for (int s = 0; s < HW1; s++) acc += dd[(n * OC1 + oc) * HW1 + s];
        db[oc] = acc;
    }
}

typedef struct backward_bufs {
    float src[N1 * IC1 * HW1], dd[N1 * OC1 * HW1];
    float dsrc[N1 * IC1 * HW1], dw[IC1 * OC1], db[OC1];
    float want_dsrc[N1 * IC1 * HW1], want_dw[IC1 * OC1], want_db[OC1];
} backward_bufs;

static void backward_bufs_init(backward_bufs *b) {
    src_1x1(b->src);
    for (int i = 0; i < N1 * OC1 * HW1; i++) b->dd[i] = (float)(i % 5) - 2;
    want_backward_1x1(b->src, b->dd, b->want_dsrc, b->want_dw, b->want_db);
}

static void test_backward_1x1_write_add(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_TRAINING, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    backward_bufs b;
    backward_bufs_init(&b);

    /* A training handle also runs forward. */
    float want[N1 * OC1 * HW1], dst[N1 * OC1 * HW1];
    want_1x1(b.src, W1, B1, want);
    assert_int_equal(deconv_forward(h, b.src, W1, B1, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));

    assert_int_equal(deconv_backward(h, b.src, W1, b.dd, b.dsrc, DECONV_REQ_WRITE, b.dw,
                                     DECONV_REQ_WRITE, b.db, DECONV_REQ_WRITE),
                     DECONV_OK);
    assert_true(floats_close(b.dsrc, b.want_dsrc, N1 * IC1 * HW1, 1e-6f));
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    assert_true(floats_close(b.db, b.want_db, OC1, 1e-6f));

    /* ADD onto the results just written doubles them. */
    assert_int_equal(deconv_backward(h, b.src, W1, b.dd, b.dsrc, DECONV_REQ_ADD, b.dw,
                                     DECONV_REQ_ADD, b.db, DECONV_REQ_ADD),
                     DECONV_OK);
    for (int i = 0; i < N1 * IC1 * HW1; i++) b.want_dsrc[i] *= 2;
    for (int i = 0; i < IC1 * OC1; i++) b.want_dw[i] *= 2;
    for (int i = 0; i < OC1; i++) b.want_db[i] *= 2;
    assert_true(floats_close(b.dsrc, b.want_dsrc, N1 * IC1 * HW1, 1e-6f));
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    assert_true(floats_close(b.db, b.want_db, OC1, 1e-6f));
    deconv_destroy(h);
}

static void test_backward_1x1_req_null(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_TRAINING, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    backward_bufs b, before;
    backward_bufs_init(&b);

    /* Only diff_src requested: the other buffers, though passed, stay untouched, and src,
     * which only diff_weights needs, may be NULL. */
    memset(b.dw, SENTINEL_BYTE, sizeof b.dw);
    memset(b.db, SENTINEL_BYTE, sizeof b.db);
    before = b;
    assert_int_equal(deconv_backward(h, NULL, W1, b.dd, b.dsrc, DECONV_REQ_WRITE, b.dw,
                                     DECONV_REQ_NULL, b.db, DECONV_REQ_NULL),
                     DECONV_OK);
    assert_true(floats_close(b.dsrc, b.want_dsrc, N1 * IC1 * HW1, 1e-6f));
    assert_memory_equal(b.dw, before.dw, sizeof b.dw);
    assert_memory_equal(b.db, before.db, sizeof b.db);

    /* Bias gradient without weight gradient (MXNet wrote the weight gradient anyway);
     * weights, which only diff_src needs, may be NULL. */
    memset(b.dsrc, SENTINEL_BYTE, sizeof b.dsrc);
    before = b;
    assert_int_equal(deconv_backward(h, b.src, NULL, b.dd, b.dsrc, DECONV_REQ_NULL, b.dw,
                                     DECONV_REQ_NULL, b.db, DECONV_REQ_WRITE),
                     DECONV_OK);
    assert_true(floats_close(b.db, b.want_db, OC1, 1e-6f));
    assert_memory_equal(b.dw, before.dw, sizeof b.dw);
    assert_memory_equal(b.dsrc, before.dsrc, sizeof b.dsrc);

    /* Weight gradient alone, with NULL buffers for the outputs not requested. */
    assert_int_equal(deconv_backward(h, b.src, NULL, b.dd, NULL, DECONV_REQ_NULL, b.dw,
                                     DECONV_REQ_WRITE, NULL, DECONV_REQ_NULL),
                     DECONV_OK);
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));

    /* Nothing requested: every pointer may be NULL. */
    assert_int_equal(deconv_backward(h, NULL, NULL, NULL, NULL, DECONV_REQ_NULL, NULL,
                                     DECONV_REQ_NULL, NULL, DECONV_REQ_NULL),
                     DECONV_OK);
    deconv_destroy(h);
}

/* Different requests in one call, each honoured on its own output. */
static void test_backward_1x1_mixed_reqs(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_TRAINING, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    backward_bufs b;
    backward_bufs_init(&b);

    /* Weight gradient without bias gradient: the weight primitive must not write the
     * diff_bias buffer it was given. */
    float db_before[OC1];
    memset(b.db, SENTINEL_BYTE, sizeof b.db);
    memcpy(db_before, b.db, sizeof b.db);
    assert_int_equal(deconv_backward(h, b.src, NULL, b.dd, NULL, DECONV_REQ_NULL, b.dw,
                                     DECONV_REQ_WRITE, b.db, DECONV_REQ_NULL),
                     DECONV_OK);
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    assert_memory_equal(b.db, db_before, sizeof b.db);

    /* ADD, WRITE, ADD onto known contents. */
    float want_db[OC1], want_dsrc[N1 * IC1 * HW1];
    memcpy(b.dsrc, b.want_dsrc, sizeof b.dsrc);
    memset(b.dw, SENTINEL_BYTE, sizeof b.dw);
    for (int i = 0; i < OC1; i++) {
        b.db[i] = 1.0f;
        want_db[i] = b.want_db[i] + 1.0f;
    }
    for (int i = 0; i < N1 * IC1 * HW1; i++) want_dsrc[i] = 2 * b.want_dsrc[i];
    assert_int_equal(deconv_backward(h, b.src, W1, b.dd, b.dsrc, DECONV_REQ_ADD, b.dw,
                                     DECONV_REQ_WRITE, b.db, DECONV_REQ_ADD),
                     DECONV_OK);
    assert_true(floats_close(b.dsrc, want_dsrc, N1 * IC1 * HW1, 1e-6f));
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    assert_true(floats_close(b.db, want_db, OC1, 1e-6f));

    /* Bias gradient alone, added. */
    for (int i = 0; i < OC1; i++) {
        b.db[i] = -3.0f;
        want_db[i] = b.want_db[i] - 3.0f;
    }
    assert_int_equal(deconv_backward(h, NULL, NULL, b.dd, NULL, DECONV_REQ_NULL, NULL,
                                     DECONV_REQ_NULL, b.db, DECONV_REQ_ADD),
                     DECONV_OK);
    assert_true(floats_close(b.db, want_db, OC1, 1e-6f));
    deconv_destroy(h);
}

static void test_backward_1x1_no_bias(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_TRAINING, 1);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    backward_bufs b;
    backward_bufs_init(&b);
    assert_int_equal(deconv_backward(h, b.src, W1, b.dd, b.dsrc, DECONV_REQ_WRITE, b.dw,
                                     DECONV_REQ_WRITE, NULL, DECONV_REQ_NULL),
                     DECONV_OK);
    assert_true(floats_close(b.dsrc, b.want_dsrc, N1 * IC1 * HW1, 1e-6f));
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    deconv_destroy(h);
}

/* ---------------------------------------------------------------- introspection */

static void test_impl_name_each_pass(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_TRAINING, 0);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    const deconv_pass passes[3] = {DECONV_PASS_FORWARD, DECONV_PASS_BACKWARD_DATA,
                                   DECONV_PASS_BACKWARD_WEIGHTS};
    for (int i = 0; i < 3; i++) {
        const char *name = deconv_impl_name(h, passes[i]);
        assert_non_null(name);
        assert_true(strlen(name) > 0);
        print_message("training pass %d: %s\n", i, name);
        /* Valid for the handle's lifetime: the same string again. */
        assert_string_equal(deconv_impl_name(h, passes[i]), name);
    }
    deconv_destroy(h);

    params_1x1(&p, DECONV_INFERENCE, 0);
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    const char *fwd = deconv_impl_name(h, DECONV_PASS_FORWARD);
    assert_non_null(fwd);
    assert_true(strlen(fwd) > 0);
    for (int i = 1; i < 3; i++) {
        assert_null(deconv_impl_name(h, passes[i]));
        const char *msg = deconv_last_error();
        assert_non_null(msg);
        if (!message_has_field(msg, "pass|mode"))
            print_error("impl_name of backward pass %d on an inference handle: \"%s\"\n", i,
                        msg);
        assert_true(message_has_field(msg, "pass|mode"));
    }
    deconv_destroy(h);
}

static void test_status_string_every_status(void **state) {
    (void)state;
    assert_string_equal(deconv_status_string(DECONV_OK), "DECONV_OK");
    assert_string_equal(deconv_status_string(DECONV_INVALID_ARGUMENT), "DECONV_INVALID_ARGUMENT");
    assert_string_equal(deconv_status_string(DECONV_UNSUPPORTED), "DECONV_UNSUPPORTED");
    assert_string_equal(deconv_status_string(DECONV_OUT_OF_MEMORY), "DECONV_OUT_OF_MEMORY");
    assert_string_equal(deconv_status_string(DECONV_INTERNAL_ERROR), "DECONV_INTERNAL_ERROR");
    assert_string_equal(deconv_status_string((deconv_status)5), "unknown status");
    assert_string_equal(deconv_status_string((deconv_status)-1), "unknown status");
    assert_string_equal(deconv_status_string((deconv_status)1000), "unknown status");
}

static void test_version(void **state) {
    (void)state;
    assert_int_equal(deconv_version(), DECONV_VERSION);
    assert_int_equal(DECONV_VERSION, DECONV_VERSION_MAJOR * 10000 + DECONV_VERSION_MINOR * 100 +
                                         DECONV_VERSION_PATCH);
}

/* A failure sets the message; a success after it leaves it as it was. */
static void test_last_error_kept_on_success(void **state) {
    (void)state;
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 9;
    int64_t out[DECONV_MAX_RANK];
    assert_int_equal(deconv_output_shape(&p, out), DECONV_INVALID_ARGUMENT);
    char saved[512];
    snprintf(saved, sizeof saved, "%s", deconv_last_error());
    assert_true(strlen(saved) > 0);

    deconv_params_init(&p);
    assert_int_equal(deconv_output_shape(&p, out), DECONV_OK);
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    float one = 1, dst = 0;
    assert_int_equal(deconv_forward(h, &one, &one, &one, &dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(dst == 2.0f);
    deconv_destroy(h);
    uint16_t bf;
    assert_int_equal(deconv_f32_to_bf16(&one, &bf, 1), DECONV_OK);
    assert_string_equal(deconv_last_error(), saved);
}

typedef struct thread_result {
    char initial[256];
    char after[256];
} thread_result;

static void *thread_body(void *arg) {
    thread_result *r = arg;
    snprintf(r->initial, sizeof r->initial, "%s", deconv_last_error());
    deconv *h = NULL;
    (void)deconv_create(NULL, &h);
    snprintf(r->after, sizeof r->after, "%s", deconv_last_error());
    return NULL;
}

/* The message is per thread: a fresh thread sees "", and its failures do not show here. */
static void test_last_error_is_thread_local(void **state) {
    (void)state;
    deconv_params p;
    deconv_params_init(&p);
    p.groups = 0;
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_INVALID_ARGUMENT);
    char mine[512];
    snprintf(mine, sizeof mine, "%s", deconv_last_error());

    thread_result r;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_body, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_string_equal(r.initial, "");
    assert_true(message_has_field(r.after, "params"));
    assert_string_equal(deconv_last_error(), mine);
}

/* ---------------------------------------------------------------- bf16 conversions */

static int bf16_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

static void test_f32_to_bf16_round_nearest_even(void **state) {
    (void)state;
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3F800000u, 0x3F80}, /* 1.0 */
        {0x3F808000u, 0x3F80}, /* tie, even below: down */
        {0x3F818000u, 0x3F82}, /* tie, odd below: up to even */
        {0x3F808001u, 0x3F81}, /* just above the tie: up */
        {0x3F807FFFu, 0x3F80}, /* just below the tie: down */
        {0xBF818000u, 0xBF82}, /* negative tie: magnitude to even */
        {0x7F7FFFFFu, 0x7F80}, /* FLT_MAX rounds to +inf */
        {0x7F800000u, 0x7F80}, /* +inf */
        {0xFF800000u, 0xFF80}, /* -inf */
        {0x00000000u, 0x0000}, /* +0 */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00018000u, 0x0002}, /* denormal tie, odd below: up */
        {0x40490FDBu, 0x4049}, /* pi */
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    float in[NC];
    uint16_t out[NC + 1];
    for (int i = 0; i < NC; i++) in[i] = bits_f32(cases[i].in);
    out[NC] = 0xA5A5; /* past count: untouched */
    assert_int_equal(deconv_f32_to_bf16(in, out, NC), DECONV_OK);
    for (int i = 0; i < NC; i++) {
        if (out[i] != cases[i].out)
            print_error("f32 0x%08x -> bf16 0x%04x, expected 0x%04x\n", cases[i].in, out[i],
                        cases[i].out);
        assert_int_equal(out[i], cases[i].out);
    }
    assert_int_equal(out[NC], 0xA5A5);

    /* NaN stays NaN, also when only low mantissa bits are set (rounding would make inf)
     * and when rounding would carry into the sign. */
    const uint32_t nans[4] = {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FFFFFFFu};
    for (int i = 0; i < 4; i++) {
        float f = bits_f32(nans[i]);
        uint16_t b = 0;
        assert_int_equal(deconv_f32_to_bf16(&f, &b, 1), DECONV_OK);
        if (!bf16_is_nan(b)) print_error("NaN 0x%08x -> 0x%04x, not NaN\n", nans[i], b);
        assert_true(bf16_is_nan(b));
    }
    /* count 0 converts nothing. */
    uint16_t keep = 0x1234;
    assert_int_equal(deconv_f32_to_bf16(in, &keep, 0), DECONV_OK);
    assert_int_equal(keep, 0x1234);
}

static void test_bf16_to_f32_and_round_trip(void **state) {
    (void)state;
    /* bf16 is the top half of an f32: widening is exact for every non-NaN value, and
     * narrowing back gives the same word. */
    enum { ALL = 65536 };
    uint16_t *words = malloc(ALL * sizeof *words), *back = malloc(ALL * sizeof *back);
    float *f = malloc((ALL + 1) * sizeof *f);
    assert_non_null(words);
    assert_non_null(back);
    assert_non_null(f);
    for (int i = 0; i < ALL; i++) words[i] = (uint16_t)i;
    f[ALL] = 42.0f;
    assert_int_equal(deconv_bf16_to_f32(words, f, ALL), DECONV_OK);
    assert_true(f[ALL] == 42.0f);
    assert_int_equal(deconv_f32_to_bf16(f, back, ALL), DECONV_OK);
    int bad = 0;
    for (int i = 0; i < ALL && bad < 5; i++) {
        if (bf16_is_nan(words[i])) {
            if (!isnan(f[i]) || !bf16_is_nan(back[i])) {
                print_error("bf16 NaN 0x%04x -> %g -> 0x%04x\n", i, (double)f[i], back[i]);
                bad++;
            }
        } else if (f32_bits(f[i]) != (uint32_t)i << 16 || back[i] != i) {
            print_error("bf16 0x%04x -> f32 0x%08x -> 0x%04x\n", i, f32_bits(f[i]), back[i]);
            bad++;
        }
    }
    free(words);
    free(back);
    free(f);
    assert_int_equal(bad, 0);
    const uint16_t one = 0x3F80;
    float x = 0;
    assert_int_equal(deconv_bf16_to_f32(&one, &x, 1), DECONV_OK);
    assert_true(x == 1.0f);
}

/* ---------------------------------------------------------------- primitive cache */

static void expect_stats(uint64_t hits, uint64_t misses, uint64_t entries) {
    uint64_t h = 99, m = 99, e = 99;
    assert_int_equal(deconv_cache_stats(&h, &m, &e), DECONV_OK);
    if (h != hits || m != misses || e != entries)
        print_error("cache stats hits %llu misses %llu entries %llu, expected %llu %llu %llu\n",
                    (unsigned long long)h, (unsigned long long)m, (unsigned long long)e,
                    (unsigned long long)hits, (unsigned long long)misses,
                    (unsigned long long)entries);
    assert_true(h == hits && m == misses && e == entries);
}

static deconv *create_1x1_sized(int64_t size) {
    deconv_params p;
    params_1x1(&p, DECONV_INFERENCE, 0);
    p.in_size[0] = size;
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    return h;
}

static void test_cache_hits_misses_clear(void **state) {
    (void)state;
    assert_int_equal(deconv_cache_set_capacity(64), DECONV_OK);
    assert_int_equal(deconv_cache_clear(), DECONV_OK);
    expect_stats(0, 0, 0);

    deconv *a = create_1x1_sized(2);
    uint64_t hits, misses, entries;
    assert_int_equal(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    assert_true(hits == 0 && misses >= 1 && entries == misses);

    /* An equal problem is served from the cache. */
    deconv *b = create_1x1_sized(2);
    expect_stats(misses, misses, entries);

    /* Clear zeroes everything; handles keep working with the primitives they hold. */
    assert_int_equal(deconv_cache_clear(), DECONV_OK);
    expect_stats(0, 0, 0);
    float src[N1 * IC1 * HW1], want[N1 * OC1 * HW1], dst[N1 * OC1 * HW1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);
    assert_int_equal(deconv_forward(b, src, W1, B1, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));
    deconv_destroy(a);
    deconv_destroy(b);
}

/* Each counter pointer may be NULL on its own; the others are still filled. */
static void test_cache_stats_single_counters(void **state) {
    (void)state;
    assert_int_equal(deconv_cache_set_capacity(64), DECONV_OK);
    assert_int_equal(deconv_cache_clear(), DECONV_OK);
    deconv *h = create_1x1_sized(2);
    uint64_t hits = 99, misses = 99, entries = 99;
    assert_int_equal(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    uint64_t m = 99, e = 99;
    assert_int_equal(deconv_cache_stats(NULL, &m, &e), DECONV_OK);
    assert_true(m == misses && e == entries);
    uint64_t x = 99, y = 99;
    assert_int_equal(deconv_cache_stats(&x, NULL, &y), DECONV_OK);
    assert_true(x == hits && y == entries);
    assert_int_equal(deconv_cache_stats(&x, &y, NULL), DECONV_OK);
    assert_true(x == hits && y == misses);
    deconv_destroy(h);
}

static void test_cache_capacity_bounds_entries(void **state) {
    (void)state;
    assert_int_equal(deconv_cache_set_capacity(64), DECONV_OK);
    assert_int_equal(deconv_cache_clear(), DECONV_OK);
    deconv *h[3];
    for (int i = 0; i < 3; i++) h[i] = create_1x1_sized(3 + i);
    uint64_t hits, misses, entries;
    assert_int_equal(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    assert_true(entries >= 3);

    /* Shrinking evicts at once. */
    assert_int_equal(deconv_cache_set_capacity(1), DECONV_OK);
    assert_int_equal(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    assert_int_equal(entries, 1);

    /* Capacity 0 disables caching: nothing kept, nothing hit. */
    assert_int_equal(deconv_cache_set_capacity(0), DECONV_OK);
    assert_int_equal(deconv_cache_clear(), DECONV_OK);
    deconv *x = create_1x1_sized(2), *y = create_1x1_sized(2);
    assert_int_equal(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    assert_int_equal(hits, 0);
    assert_int_equal(entries, 0);
    deconv_destroy(x);
    deconv_destroy(y);
    for (int i = 0; i < 3; i++) deconv_destroy(h[i]);
    assert_int_equal(deconv_cache_set_capacity(64), DECONV_OK);
}

/* ---------------------------------------------------------------- deconv_get_api */

static void test_get_api_current_version(void **state) {
    (void)state;
    const deconv_api *api = deconv_get_api(DECONV_API_VERSION);
    assert_non_null(api);
    assert_int_equal(api->api_version, DECONV_API_VERSION);
    assert_int_equal(api->library_version, DECONV_VERSION);
    /* Every member is set. */
    const void *members[] = {
        (const void *)api->params_init,   (const void *)api->output_shape,
        (const void *)api->buffer_sizes,  (const void *)api->create,
        (const void *)api->destroy,       (const void *)api->set_weights,
        (const void *)api->forward,       (const void *)api->backward,
        (const void *)api->impl_name,     (const void *)api->last_error,
        (const void *)api->status_string, (const void *)api->version,
        (const void *)api->bf16_supported, (const void *)api->f32_to_bf16,
        (const void *)api->bf16_to_f32,   (const void *)api->cache_set_capacity,
        (const void *)api->cache_stats,   (const void *)api->cache_clear,
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        if (!members[i]) print_error("api member %zu is NULL\n", i);
        assert_non_null(members[i]);
    }

    /* ... and works: the 1x1 problem through the table alone. */
    deconv_params p;
    assert_int_equal(api->params_init(&p), DECONV_OK);
    assert_int_equal(p.struct_size, sizeof p);
    params_1x1(&p, DECONV_TRAINING, 0);
    int64_t out[DECONV_MAX_RANK];
    assert_int_equal(api->output_shape(&p, out), DECONV_OK);
    assert_true(out[0] == 2 && out[1] == 2);
    deconv_sizes sz;
    assert_int_equal(api->buffer_sizes(&p, &sz), DECONV_OK);
    assert_int_equal(sz.dst, N1 * OC1 * HW1);
    deconv *h = NULL;
    assert_int_equal(api->create(&p, &h), DECONV_OK);
    float src[N1 * IC1 * HW1], want[N1 * OC1 * HW1], dst[N1 * OC1 * HW1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);
    assert_int_equal(api->forward(h, src, W1, B1, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));
    backward_bufs b;
    backward_bufs_init(&b);
    assert_int_equal(api->backward(h, b.src, W1, b.dd, b.dsrc, DECONV_REQ_WRITE, b.dw,
                                   DECONV_REQ_WRITE, b.db, DECONV_REQ_WRITE),
                     DECONV_OK);
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1e-6f));
    assert_non_null(api->impl_name(h, DECONV_PASS_BACKWARD_WEIGHTS));
    api->destroy(h);

    params_1x1(&p, DECONV_INFERENCE, 0);
    assert_int_equal(api->create(&p, &h), DECONV_OK);
    assert_int_equal(api->set_weights(h, W1, B1), DECONV_OK);
    assert_int_equal(api->forward(h, src, NULL, NULL, dst, DECONV_REQ_WRITE), DECONV_OK);
    assert_true(floats_close(dst, want, N1 * OC1 * HW1, 1e-6f));
    api->destroy(h);

    assert_int_equal(api->create(NULL, &h), DECONV_INVALID_ARGUMENT);
    assert_true(message_has_field(api->last_error(), "params"));
    assert_string_equal(api->status_string(DECONV_UNSUPPORTED), "DECONV_UNSUPPORTED");
    assert_int_equal(api->version(), DECONV_VERSION);
    assert_int_equal(api->bf16_supported(), deconv_bf16_supported());
    float f = 1.0f;
    uint16_t w = 0;
    assert_int_equal(api->f32_to_bf16(&f, &w, 1), DECONV_OK);
    assert_int_equal(w, 0x3F80);
    f = 0;
    assert_int_equal(api->bf16_to_f32(&w, &f, 1), DECONV_OK);
    assert_true(f == 1.0f);
    assert_int_equal(api->cache_set_capacity(64), DECONV_OK);
    assert_int_equal(api->cache_clear(), DECONV_OK);
    uint64_t hits = 9, misses = 9, entries = 9;
    assert_int_equal(api->cache_stats(&hits, &misses, &entries), DECONV_OK);
    assert_true(hits == 0 && misses == 0 && entries == 0);
}

static void test_get_api_wrong_version(void **state) {
    (void)state;
    const uint32_t wrong[3] = {0, DECONV_API_VERSION + 1, 0xFFFFFFFFu};
    const char *values[3] = {"0", "2", "4294967295"};
    for (int i = 0; i < 3; i++) {
        assert_null(deconv_get_api(wrong[i]));
        assert_int_equal(check_message("deconv_get_api", "api_version", values[i]), 0);
    }
}

/* ---------------------------------------------------------------- bf16 handles */

static void to_bf16(const float *f, uint16_t *b, size_t n) {
    assert_int_equal(deconv_f32_to_bf16(f, b, n), DECONV_OK);
}

/* bf16 on every CPU: with oneDNN's bf16 kernels or, without AVX-512 (c_api_without_avx512), in
 * f32 on converted copies. */
static void test_bf16_handle(void **state) {
    (void)state;
    deconv_params p;
    params_1x1(&p, DECONV_INFERENCE, 0);
    p.dtype = DECONV_BF16;
    deconv *h = NULL;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    /* All values here are small integers (and .5), exact in bf16. */
    float src[N1 * IC1 * HW1], want[N1 * OC1 * HW1], got[N1 * OC1 * HW1];
    uint16_t bsrc[N1 * IC1 * HW1], bw[IC1 * OC1], bb[OC1], bdst[N1 * OC1 * HW1];
    src_1x1(src);
    want_1x1(src, W1, B1, want);
    to_bf16(src, bsrc, N1 * IC1 * HW1);
    to_bf16(W1, bw, IC1 * OC1);
    to_bf16(B1, bb, OC1);
    assert_int_equal(deconv_forward(h, bsrc, bw, bb, bdst, DECONV_REQ_WRITE), DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdst, got, N1 * OC1 * HW1), DECONV_OK);
    assert_true(floats_close(got, want, N1 * OC1 * HW1, 1.0f / 128));
    assert_int_equal(deconv_set_weights(h, bw, bb), DECONV_OK);
    memset(bdst, 0, sizeof bdst);
    assert_int_equal(deconv_forward(h, bsrc, NULL, NULL, bdst, DECONV_REQ_WRITE), DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdst, got, N1 * OC1 * HW1), DECONV_OK);
    assert_true(floats_close(got, want, N1 * OC1 * HW1, 1.0f / 128));
    deconv_destroy(h);

    /* Training: backward in bf16. */
    params_1x1(&p, DECONV_TRAINING, 0);
    p.dtype = DECONV_BF16;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    backward_bufs b;
    backward_bufs_init(&b);
    uint16_t bdd[N1 * OC1 * HW1], bdsrc[N1 * IC1 * HW1], bdw[IC1 * OC1], bdb[OC1];
    to_bf16(b.dd, bdd, N1 * OC1 * HW1);
    assert_int_equal(deconv_backward(h, bsrc, bw, bdd, bdsrc, DECONV_REQ_WRITE, bdw,
                                     DECONV_REQ_WRITE, bdb, DECONV_REQ_WRITE),
                     DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdsrc, b.dsrc, N1 * IC1 * HW1), DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdw, b.dw, IC1 * OC1), DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdb, b.db, OC1), DECONV_OK);
    assert_true(floats_close(b.dsrc, b.want_dsrc, N1 * IC1 * HW1, 1.0f / 128));
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1.0f / 128));
    assert_true(floats_close(b.db, b.want_db, OC1, 1.0f / 128));
    /* The bias gradient alone (a path of its own), and the weight gradient without it. */
    memset(bdb, 0, sizeof bdb);
    assert_int_equal(deconv_backward(h, NULL, NULL, bdd, NULL, DECONV_REQ_NULL, NULL,
                                     DECONV_REQ_NULL, bdb, DECONV_REQ_WRITE),
                     DECONV_OK);
    assert_int_equal(deconv_bf16_to_f32(bdb, b.db, OC1), DECONV_OK);
    assert_true(floats_close(b.db, b.want_db, OC1, 1.0f / 128));
    uint16_t bdb_before[OC1];
    memcpy(bdb_before, bdb, sizeof bdb);
    assert_int_equal(deconv_backward(h, bsrc, NULL, bdd, NULL, DECONV_REQ_NULL, bdw,
                                     DECONV_REQ_ADD, bdb, DECONV_REQ_NULL),
                     DECONV_OK);
    assert_memory_equal(bdb, bdb_before, sizeof bdb);
    assert_int_equal(deconv_bf16_to_f32(bdw, b.dw, IC1 * OC1), DECONV_OK);
    for (int i = 0; i < IC1 * OC1; i++) b.want_dw[i] *= 2;
    assert_true(floats_close(b.dw, b.want_dw, IC1 * OC1, 1.0f / 64));
    deconv_destroy(h);

    params_1x1(&p, DECONV_INFERENCE, 0);
    p.dtype = DECONV_BF16;
    p.layout = DECONV_CHANNELS_LAST;
    assert_int_equal(deconv_create(&p, &h), DECONV_OK);
    deconv_destroy(h);
}

/* Run with ONEDNN_MAX_CPU_ISA=AVX2: bf16 runs, computed in f32 (no oneDNN bf16 kernel named). */
void test_bf16_in_f32_on_avx2_cpu(void **state) {
    (void)state;
    assert_int_equal(deconv_bf16_supported(), 1);
    for (int mode = 0; mode < 2; mode++)
        for (int layout = 0; layout < 2; layout++) {
            deconv_params p;
            params_base(&p);
            p.dtype = DECONV_BF16;
            p.mode = (deconv_mode)mode;
            p.layout = (deconv_layout)layout;
            deconv *h = NULL;
            assert_int_equal(deconv_create(&p, &h), DECONV_OK);
            for (int pass = 0; pass < (mode == DECONV_TRAINING ? 3 : 1); pass++) {
                const char *impl = deconv_impl_name(h, (deconv_pass)pass);
                assert_non_null(impl);
                if (strstr(impl, "bf16") != NULL) fail_msg("a bf16 kernel without AVX-512: %s", impl);
            }
            deconv_destroy(h);
        }
}

const struct CMUnitTest api_tests[] = {
    cmocka_unit_test(test_params_init_defaults),
    cmocka_unit_test(test_output_shape_cases),
    cmocka_unit_test(test_entries_past_rank_are_ignored),
    cmocka_unit_test(test_buffer_sizes),
    cmocka_unit_test(test_create_destroy),
    cmocka_unit_test(test_forward_1x1_write_add_null),
    cmocka_unit_test(test_forward_1x1_channels_last),
    cmocka_unit_test(test_forward_1x1_groups),
    cmocka_unit_test(test_forward_all_ones_3x3_pad1),
    cmocka_unit_test(test_forward_1d_stride2_adj1),
    cmocka_unit_test(test_forward_target_shape_equals_pad_adj),
    cmocka_unit_test(test_set_weights_then_forward_without_weights),
    cmocka_unit_test(test_backward_1x1_write_add),
    cmocka_unit_test(test_backward_1x1_req_null),
    cmocka_unit_test(test_backward_1x1_mixed_reqs),
    cmocka_unit_test(test_backward_1x1_no_bias),
    cmocka_unit_test(test_impl_name_each_pass),
    cmocka_unit_test(test_status_string_every_status),
    cmocka_unit_test(test_version),
    cmocka_unit_test(test_last_error_kept_on_success),
    cmocka_unit_test(test_last_error_is_thread_local),
    cmocka_unit_test(test_f32_to_bf16_round_nearest_even),
    cmocka_unit_test(test_bf16_to_f32_and_round_trip),
    cmocka_unit_test(test_cache_hits_misses_clear),
    cmocka_unit_test(test_cache_stats_single_counters),
    cmocka_unit_test(test_cache_capacity_bounds_entries),
    cmocka_unit_test(test_get_api_current_version),
    cmocka_unit_test(test_get_api_wrong_version),
    cmocka_unit_test(test_bf16_handle),
};
const size_t api_test_count = sizeof api_tests / sizeof api_tests[0];
