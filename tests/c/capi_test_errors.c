/* Every bad input, one CMocka test each: the exact status, a message naming the field and
 * value, and every output (buffers, sizes, out_size, the handle out-parameter) unchanged. */
#define _POSIX_C_SOURCE 200809L
#include "capi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets deconv_last_error() to a message naming none of the fields the tables expect, so that
 * a stale message from an earlier test cannot satisfy a check. */
static void prime_last_error(void) { (void)deconv_get_api(12345); }

/* ================================================================ invalid parameters */

typedef struct param_case {
    const char *name;
    void (*mutate)(deconv_params *p); /* applied to params_base() */
    deconv_status want;
    const char *fields; /* as message_has_field */
    const char *value;  /* decimal value the message must contain, or NULL */
} param_case;

#define BIG ((int64_t)1 << 40)
#define MUT(id, body) \
    static void mut_##id(deconv_params *p) { body; }

MUT(struct_size_0, p->struct_size = 0)
MUT(struct_size_7, p->struct_size = 7)
MUT(rank_0, p->rank = 0)
MUT(rank_4, p->rank = 4)
MUT(rank_neg, p->rank = -1)
MUT(batch_0, p->batch = 0)
MUT(batch_neg, p->batch = -2)
MUT(in_channels_0, p->in_channels = 0)
MUT(in_channels_neg, p->in_channels = -4)
MUT(out_channels_0, p->out_channels = 0)
MUT(out_channels_neg, p->out_channels = -6)
MUT(groups_0, p->groups = 0)
MUT(groups_neg, p->groups = -2)
MUT(groups_3, p->groups = 3)   /* divides out_channels 6, not in_channels 4 */
MUT(groups_4, p->groups = 4)   /* divides in_channels 4, not out_channels 6 */
MUT(groups_8, p->groups = 8)   /* divides neither */
MUT(in_size0_0, p->in_size[0] = 0)
MUT(in_size1_neg, p->in_size[1] = -1)
MUT(kernel1_0, p->kernel[1] = 0)
MUT(kernel0_neg, p->kernel[0] = -2)
MUT(stride0_0, p->stride[0] = 0)
MUT(stride1_neg, p->stride[1] = -3)
MUT(dilate1_0, p->dilate[1] = 0)
MUT(dilate0_neg, p->dilate[0] = -1)
MUT(pad0_neg, p->pad[0] = -1)
MUT(pad0_out0, p->pad[0] = 6)   /* out[0] = 11 - 12 + 1 = 0 */
MUT(pad1_outneg, p->pad[1] = 7) /* out[1] = 11 - 14 + 2 = -1 */
MUT(adj0_neg, p->adj[0] = -1)
MUT(adj0_eq_stride, p->adj[0] = 2)
MUT(adj1_gt_stride, p->adj[1] = 5)
MUT(target0_too_big, p->target_shape[0] = 12; p->target_shape[1] = 11) /* full output 11x11 */
MUT(target1_too_big, p->target_shape[0] = 11; p->target_shape[1] = 12)
MUT(target_only0, p->target_shape[0] = 8)
MUT(target_only1, p->target_shape[1] = 8)
MUT(target0_neg, p->target_shape[0] = -1; p->target_shape[1] = 5)
MUT(target0_huge, p->target_shape[0] = INT64_MAX; p->target_shape[1] = 5)
MUT(dtype_2, p->dtype = (deconv_dtype)2)
MUT(dtype_neg, p->dtype = (deconv_dtype)-1)
MUT(layout_2, p->layout = (deconv_layout)2)
MUT(layout_neg, p->layout = (deconv_layout)-1)
MUT(mode_2, p->mode = (deconv_mode)2)
MUT(mode_100, p->mode = (deconv_mode)100)
/* Sizes whose element counts or output sizes do not fit in int64. */
/* Spatial extents are limited to 2^24: the full output extent 2*(2^23-1)+3 = 2^24+1 is not. */
MUT(full_output_above_int, p->rank = 1; p->in_size[0] = (int64_t)1 << 23; p->kernel[0] = 3;
    p->stride[0] = 2; p->pad[0] = 0; p->adj[0] = 0; p->dilate[0] = 1; p->target_shape[0] = 0)
MUT(in_size_above_int, p->in_size[1] = (int64_t)1 << 31)
MUT(in_size_big_3d, p->rank = 3; p->in_size[0] = p->in_size[1] = p->in_size[2] = BIG)
MUT(channels_big, p->in_channels = BIG; p->out_channels = BIG)
MUT(out_channels_huge, p->out_channels = (int64_t)1 << 62)
MUT(batch_max, p->batch = INT64_MAX)
MUT(kernel_big_3d, p->rank = 3; p->kernel[0] = p->kernel[1] = p->kernel[2] = (int64_t)1 << 31)
MUT(in_size0_max, p->in_size[0] = INT64_MAX)
MUT(stride0_max, p->stride[0] = INT64_MAX)
MUT(dilate0_max, p->dilate[0] = INT64_MAX)
MUT(pad0_max, p->pad[0] = INT64_MAX)

#define INVALID DECONV_INVALID_ARGUMENT
static const param_case param_cases[] = {
    {"params: struct_size 0", mut_struct_size_0, INVALID, "struct_size", "0"},
    {"params: struct_size 7", mut_struct_size_7, INVALID, "struct_size", "7"},
    {"params: rank 0", mut_rank_0, INVALID, "rank", "0"},
    {"params: rank 4", mut_rank_4, INVALID, "rank", "4"},
    {"params: rank -1", mut_rank_neg, INVALID, "rank", "-1"},
    {"params: batch 0", mut_batch_0, INVALID, "batch", "0"},
    {"params: batch -2", mut_batch_neg, INVALID, "batch", "-2"},
    {"params: in_channels 0", mut_in_channels_0, INVALID, "in_channels", "0"},
    {"params: in_channels -4", mut_in_channels_neg, INVALID, "in_channels", "-4"},
    {"params: out_channels 0", mut_out_channels_0, INVALID, "out_channels", "0"},
    {"params: out_channels -6", mut_out_channels_neg, INVALID, "out_channels", "-6"},
    {"params: groups 0", mut_groups_0, INVALID, "groups", "0"},
    {"params: groups -2", mut_groups_neg, INVALID, "groups", "-2"},
    {"params: groups 3 not dividing in_channels 4", mut_groups_3, INVALID, "groups,in_channels",
     "3"},
    {"params: groups 4 not dividing out_channels 6", mut_groups_4, INVALID,
     "groups,out_channels", "4"},
    {"params: groups 8 dividing no channel count", mut_groups_8, INVALID, "groups", "8"},
    {"params: in_size[0] 0", mut_in_size0_0, INVALID, "in_size[0]", "0"},
    {"params: in_size[1] -1", mut_in_size1_neg, INVALID, "in_size[1]", "-1"},
    {"params: kernel[1] 0", mut_kernel1_0, INVALID, "kernel[1]", "0"},
    {"params: kernel[0] -2", mut_kernel0_neg, INVALID, "kernel[0]", "-2"},
    {"params: stride[0] 0", mut_stride0_0, INVALID, "stride[0]", "0"},
    {"params: stride[1] -3", mut_stride1_neg, INVALID, "stride[1]", "-3"},
    {"params: dilate[1] 0", mut_dilate1_0, INVALID, "dilate[1]", "0"},
    {"params: dilate[0] -1", mut_dilate0_neg, INVALID, "dilate[0]", "-1"},
    {"params: pad[0] -1", mut_pad0_neg, INVALID, "pad[0]", "-1"},
    {"params: pad[0] 6 gives output 0", mut_pad0_out0, INVALID, "pad[0]", "6"},
    {"params: pad[1] 7 gives output -1", mut_pad1_outneg, INVALID, "pad[1]", "7"},
    {"params: adj[0] -1", mut_adj0_neg, INVALID, "adj[0]", "-1"},
    {"params: adj[0] 2 equal to stride 2", mut_adj0_eq_stride, INVALID, "adj[0]", "2"},
    {"params: adj[1] 5 above stride 3", mut_adj1_gt_stride, INVALID, "adj[1]", "5"},
    {"params: target_shape[0] 12 above full output 11", mut_target0_too_big, INVALID,
     "target_shape[0]", "12"},
    {"params: target_shape[1] 12 above full output 11", mut_target1_too_big, INVALID,
     "target_shape[1]", "12"},
    {"params: target_shape given for dim 0 only", mut_target_only0, INVALID, "target_shape[1]",
     NULL},
    {"params: target_shape given for dim 1 only", mut_target_only1, INVALID, "target_shape[0]",
     NULL},
    {"params: target_shape[0] -1", mut_target0_neg, INVALID, "target_shape[0]", "-1"},
    {"params: target_shape[0] INT64_MAX", mut_target0_huge, INVALID, "target_shape[0]",
     "9223372036854775807"},
    {"params: dtype 2", mut_dtype_2, INVALID, "dtype", "2"},
    {"params: dtype -1", mut_dtype_neg, INVALID, "dtype", "-1"},
    {"params: layout 2", mut_layout_2, INVALID, "layout", "2"},
    {"params: layout -1", mut_layout_neg, INVALID, "layout", "-1"},
    {"params: mode 2", mut_mode_2, INVALID, "mode", "2"},
    {"params: mode 100", mut_mode_100, INVALID, "mode", "100"},
    {"params: full output extent 2^24+1 above the spatial limit", mut_full_output_above_int, INVALID,
     "in_size[0]", "16777217"},
    {"params: in_size[1] 2^31 above the spatial limit", mut_in_size_above_int, INVALID, "in_size[1]",
     "2147483648"},
    {"params: in_size 2^40 in 3 dims overflows element counts", mut_in_size_big_3d, INVALID,
     "in_size|src|dst", NULL},
    {"params: channels 2^40 overflow the weights count", mut_channels_big, INVALID,
     "in_channels|out_channels|src|weights", NULL},
    {"params: out_channels 2^62 overflows counts", mut_out_channels_huge, INVALID,
     "out_channels|weights|dst", NULL},
    {"params: batch INT64_MAX overflows counts", mut_batch_max, INVALID, "batch|src|dst", NULL},
    {"params: kernel 2^31 in 3 dims overflows counts", mut_kernel_big_3d, INVALID,
     "kernel|weights|dst", NULL},
    {"params: in_size[0] INT64_MAX overflows the output size", mut_in_size0_max, INVALID,
     "in_size[0]", NULL},
    {"params: stride[0] INT64_MAX overflows the output size", mut_stride0_max, INVALID,
     "stride[0]", NULL},
    {"params: dilate[0] INT64_MAX overflows the output size", mut_dilate0_max, INVALID,
     "dilate[0]", NULL},
    {"params: pad[0] INT64_MAX overflows the output size", mut_pad0_max, INVALID, "pad[0]", NULL},
};

/* Every function taking params rejects the case alike and writes nothing. */
static void run_param_case(void **state) {
    const param_case *c = *state;
    deconv_params p;
    params_base(&p);
    c->mutate(&p);
    char what[256];
    int bad = 0;

    int64_t out[DECONV_MAX_RANK], out_before[DECONV_MAX_RANK];
    memset(out, SENTINEL_BYTE, sizeof out);
    memcpy(out_before, out, sizeof out);
    prime_last_error();
    snprintf(what, sizeof what, "deconv_output_shape(%s)", c->name);
    bad += check_failure(what, deconv_output_shape(&p, out), c->want, c->fields, c->value);
    if (memcmp(out, out_before, sizeof out)) {
        print_error("%s wrote out_size\n", what);
        bad++;
    }

    deconv_sizes sizes, sizes_before;
    memset(&sizes, SENTINEL_BYTE, sizeof sizes);
    memcpy(&sizes_before, &sizes, sizeof sizes);
    prime_last_error();
    snprintf(what, sizeof what, "deconv_buffer_sizes(%s)", c->name);
    bad += check_failure(what, deconv_buffer_sizes(&p, &sizes), c->want, c->fields, c->value);
    if (memcmp(&sizes, &sizes_before, sizeof sizes)) {
        print_error("%s wrote sizes\n", what);
        bad++;
    }

    deconv *h = SENTINEL_HANDLE;
    prime_last_error();
    snprintf(what, sizeof what, "deconv_create(%s)", c->name);
    deconv_status st = deconv_create(&p, &h);
    bad += check_failure(what, st, c->want, c->fields, c->value);
    if (st == DECONV_OK) {
        deconv_destroy(h);
    } else if (h != SENTINEL_HANDLE) {
        print_error("%s wrote handle\n", what);
        bad++;
    }
    assert_int_equal(bad, 0);
}

size_t invalid_params_tests(struct CMUnitTest **tests) {
    size_t n = sizeof param_cases / sizeof param_cases[0];
    *tests = calloc(n, sizeof **tests);
    assert_non_null(*tests);
    for (size_t i = 0; i < n; i++) {
        (*tests)[i].name = param_cases[i].name;
        (*tests)[i].test_func = run_param_case;
        (*tests)[i].initial_state = (void *)&param_cases[i];
    }
    return n;
}

/* ================================================================ invalid calls */

/* A 2D problem: 1 x 2 channels x 3x3 -> 2 channels, kernel 2, stride 2: output 6x6. */
enum { SRC_N = 18, W_N = 16, B_N = 2, DST_N = 72 };

typedef struct fixture {
    deconv_params p;
    deconv *inf_bias, *inf_nobias, *train_bias, *train_nobias;
    float src[SRC_N], w[W_N], b[B_N], dd[DST_N];
    uint16_t bf16_in[4];
} fixture;

/* Everything a call may write. All of it starts as SENTINEL_BYTE and must stay so. */
typedef struct outputs {
    float dst[DST_N], dsrc[SRC_N], dw[W_N], db[B_N];
    int64_t out_size[DECONV_MAX_RANK];
    deconv_sizes sizes;
    deconv *handle;
    uint16_t bf16[4];
    float f32[4];
    uint64_t hits, misses, entries;
} outputs;

static fixture fx;

static deconv *fixture_handle(int training, int no_bias) {
    deconv_params p = fx.p;
    p.mode = training ? DECONV_TRAINING : DECONV_INFERENCE;
    p.no_bias = no_bias;
    deconv *h = NULL;
    if (deconv_create(&p, &h) != DECONV_OK) {
        print_error("fixture: deconv_create failed: %s\n", deconv_last_error());
        return NULL;
    }
    return h;
}

int invalid_calls_setup(void **state) {
    (void)state;
    deconv_params_init(&fx.p);
    fx.p.in_channels = 2;
    fx.p.out_channels = 2;
    for (int i = 0; i < 2; i++) {
        fx.p.in_size[i] = 3;
        fx.p.kernel[i] = 2;
        fx.p.stride[i] = 2;
    }
    deconv_sizes s;
    if (deconv_buffer_sizes(&fx.p, &s) != DECONV_OK || s.src != SRC_N || s.weights != W_N ||
        s.bias != B_N || s.dst != DST_N) {
        print_error("fixture: unexpected buffer sizes\n");
        return -1;
    }
    for (int i = 0; i < SRC_N; i++) fx.src[i] = 1;
    for (int i = 0; i < W_N; i++) fx.w[i] = 1;
    for (int i = 0; i < B_N; i++) fx.b[i] = 1;
    for (int i = 0; i < DST_N; i++) fx.dd[i] = 1;
    for (int i = 0; i < 4; i++) fx.bf16_in[i] = 0x3F80;
    fx.inf_bias = fixture_handle(0, 0);
    fx.inf_nobias = fixture_handle(0, 1);
    fx.train_bias = fixture_handle(1, 0);
    fx.train_nobias = fixture_handle(1, 1);
    return fx.inf_bias && fx.inf_nobias && fx.train_bias && fx.train_nobias ? 0 : -1;
}

int invalid_calls_teardown(void **state) {
    (void)state;
    deconv_destroy(fx.inf_bias);
    deconv_destroy(fx.inf_nobias);
    deconv_destroy(fx.train_bias);
    deconv_destroy(fx.train_nobias);
    return 0;
}

typedef struct call_case {
    const char *name;
    deconv_status (*call)(outputs *o);
    const char *fields;
    const char *value;
} call_case;

#define CALL(id, expr) \
    static deconv_status call_##id(outputs *o) { \
        (void)o;                                 \
        return expr;                             \
    }
#define W DECONV_REQ_WRITE
#define A DECONV_REQ_ADD

/* impl_name returns a pointer: NULL counts as the failure under test. */
static deconv_status impl_name_status(const deconv *h, deconv_pass pass) {
    return deconv_impl_name(h, pass) ? DECONV_OK : INVALID;
}

CALL(params_init_null, deconv_params_init(NULL))
CALL(output_shape_params_null, deconv_output_shape(NULL, o->out_size))
CALL(output_shape_out_null, deconv_output_shape(&fx.p, NULL))
CALL(buffer_sizes_params_null, deconv_buffer_sizes(NULL, &o->sizes))
CALL(buffer_sizes_sizes_null, deconv_buffer_sizes(&fx.p, NULL))
CALL(create_params_null, deconv_create(NULL, &o->handle))
CALL(create_handle_null, deconv_create(&fx.p, NULL))
CALL(set_weights_handle_null, deconv_set_weights(NULL, fx.w, fx.b))
CALL(set_weights_weights_null, deconv_set_weights(fx.inf_bias, NULL, fx.b))
CALL(set_weights_bias_missing, deconv_set_weights(fx.inf_bias, fx.w, NULL))
CALL(set_weights_bias_unexpected, deconv_set_weights(fx.inf_nobias, fx.w, fx.b))
CALL(fwd_handle_null, deconv_forward(NULL, fx.src, fx.w, fx.b, o->dst, W))
CALL(fwd_src_null, deconv_forward(fx.inf_bias, NULL, fx.w, fx.b, o->dst, W))
CALL(fwd_dst_null_write, deconv_forward(fx.inf_bias, fx.src, fx.w, fx.b, NULL, W))
CALL(fwd_dst_null_add, deconv_forward(fx.inf_bias, fx.src, fx.w, fx.b, NULL, A))
CALL(fwd_req_3, deconv_forward(fx.inf_bias, fx.src, fx.w, fx.b, o->dst, (deconv_req)3))
CALL(fwd_req_neg, deconv_forward(fx.inf_bias, fx.src, fx.w, fx.b, o->dst, (deconv_req)-1))
CALL(fwd_no_weights_inference, deconv_forward(fx.inf_bias, fx.src, NULL, NULL, o->dst, W))
CALL(fwd_no_weights_nobias, deconv_forward(fx.inf_nobias, fx.src, NULL, NULL, o->dst, W))
CALL(fwd_no_weights_training, deconv_forward(fx.train_bias, fx.src, NULL, NULL, o->dst, W))
CALL(fwd_bias_missing, deconv_forward(fx.inf_bias, fx.src, fx.w, NULL, o->dst, W))
CALL(fwd_bias_missing_training, deconv_forward(fx.train_bias, fx.src, fx.w, NULL, o->dst, W))
CALL(fwd_bias_unexpected, deconv_forward(fx.inf_nobias, fx.src, fx.w, fx.b, o->dst, W))
CALL(bwd_handle_null,
     deconv_backward(NULL, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_inference,
     deconv_backward(fx.inf_bias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_diff_dst_null,
     deconv_backward(fx.train_bias, fx.src, fx.w, NULL, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_req_src_3, deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, o->dsrc,
                                    (deconv_req)3, o->dw, W, o->db, W))
CALL(bwd_req_weights_9, deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw,
                                        (deconv_req)9, o->db, W))
CALL(bwd_req_bias_neg, deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw,
                                       W, o->db, (deconv_req)-1))
CALL(bwd_diff_src_null,
     deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, NULL, W, o->dw, W, o->db, W))
CALL(bwd_diff_weights_null,
     deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, o->dsrc, W, NULL, A, o->db, W))
CALL(bwd_diff_bias_null,
     deconv_backward(fx.train_bias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw, W, NULL, W))
CALL(bwd_weights_null,
     deconv_backward(fx.train_bias, fx.src, NULL, fx.dd, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_src_null,
     deconv_backward(fx.train_bias, NULL, fx.w, fx.dd, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_req_bias_write_nobias,
     deconv_backward(fx.train_nobias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw, W, o->db, W))
CALL(bwd_req_bias_add_nobias,
     deconv_backward(fx.train_nobias, fx.src, fx.w, fx.dd, o->dsrc, W, o->dw, W, o->db, A))
CALL(impl_name_handle_null, impl_name_status(NULL, DECONV_PASS_FORWARD))
CALL(impl_name_pass_3, impl_name_status(fx.train_bias, (deconv_pass)3))
CALL(impl_name_pass_neg, impl_name_status(fx.train_bias, (deconv_pass)-1))
CALL(to_bf16_src_null, deconv_f32_to_bf16(NULL, o->bf16, 4))
CALL(to_bf16_dst_null, deconv_f32_to_bf16(fx.src, NULL, 4))
CALL(to_f32_src_null, deconv_bf16_to_f32(NULL, o->f32, 4))
CALL(to_f32_dst_null, deconv_bf16_to_f32(fx.bf16_in, NULL, 4))
CALL(stats_all_null, deconv_cache_stats(NULL, NULL, NULL))

/* The order matters once: the failed set_weights calls come before the forward that needs
 * weights, which must still fail (a failed set_weights keeps nothing). */
static const call_case call_cases[] = {
    {"deconv_params_init: params NULL", call_params_init_null, "params", NULL},
    {"deconv_output_shape: params NULL", call_output_shape_params_null, "params", NULL},
    {"deconv_output_shape: out_size NULL", call_output_shape_out_null, "out_size", NULL},
    {"deconv_buffer_sizes: params NULL", call_buffer_sizes_params_null, "params", NULL},
    {"deconv_buffer_sizes: sizes NULL", call_buffer_sizes_sizes_null, "sizes", NULL},
    {"deconv_create: params NULL", call_create_params_null, "params", NULL},
    {"deconv_create: handle NULL", call_create_handle_null, "handle", NULL},
    {"deconv_set_weights: handle NULL", call_set_weights_handle_null, "handle", NULL},
    {"deconv_set_weights: weights NULL", call_set_weights_weights_null, "weights", NULL},
    {"deconv_set_weights: bias NULL on a biased problem", call_set_weights_bias_missing, "bias",
     NULL},
    {"deconv_set_weights: bias given on a no_bias problem", call_set_weights_bias_unexpected,
     "bias", NULL},
    {"deconv_forward: handle NULL", call_fwd_handle_null, "handle", NULL},
    {"deconv_forward: src NULL", call_fwd_src_null, "src", NULL},
    {"deconv_forward: dst NULL with req WRITE", call_fwd_dst_null_write, "dst", NULL},
    {"deconv_forward: dst NULL with req ADD", call_fwd_dst_null_add, "dst", NULL},
    {"deconv_forward: req 3", call_fwd_req_3, "req", "3"},
    {"deconv_forward: req -1", call_fwd_req_neg, "req", "-1"},
    {"deconv_forward: weights NULL before set_weights", call_fwd_no_weights_inference, "weights",
     NULL},
    {"deconv_forward: weights NULL before set_weights (no_bias)", call_fwd_no_weights_nobias,
     "weights", NULL},
    {"deconv_forward: weights NULL on a training handle", call_fwd_no_weights_training,
     "weights", NULL},
    {"deconv_forward: bias NULL on a biased problem", call_fwd_bias_missing, "bias", NULL},
    {"deconv_forward: bias NULL on a biased training problem", call_fwd_bias_missing_training,
     "bias", NULL},
    {"deconv_forward: bias given on a no_bias problem", call_fwd_bias_unexpected, "bias", NULL},
    {"deconv_backward: handle NULL", call_bwd_handle_null, "handle", NULL},
    {"deconv_backward: inference handle", call_bwd_inference, "mode", NULL},
    {"deconv_backward: diff_dst NULL", call_bwd_diff_dst_null, "diff_dst", NULL},
    {"deconv_backward: req_src 3", call_bwd_req_src_3, "req_src", "3"},
    {"deconv_backward: req_weights 9", call_bwd_req_weights_9, "req_weights", "9"},
    {"deconv_backward: req_bias -1", call_bwd_req_bias_neg, "req_bias", "-1"},
    {"deconv_backward: diff_src NULL with req WRITE", call_bwd_diff_src_null, "diff_src", NULL},
    {"deconv_backward: diff_weights NULL with req ADD", call_bwd_diff_weights_null,
     "diff_weights", NULL},
    {"deconv_backward: diff_bias NULL with req WRITE", call_bwd_diff_bias_null, "diff_bias",
     NULL},
    {"deconv_backward: weights NULL with req_src WRITE", call_bwd_weights_null, "weights", NULL},
    {"deconv_backward: src NULL with req_weights WRITE", call_bwd_src_null, "src", NULL},
    {"deconv_backward: req_bias WRITE on a no_bias problem", call_bwd_req_bias_write_nobias,
     "req_bias", NULL},
    {"deconv_backward: req_bias ADD on a no_bias problem", call_bwd_req_bias_add_nobias,
     "req_bias", NULL},
    {"deconv_impl_name: handle NULL", call_impl_name_handle_null, "handle", NULL},
    {"deconv_impl_name: pass 3", call_impl_name_pass_3, "pass", "3"},
    {"deconv_impl_name: pass -1", call_impl_name_pass_neg, "pass", "-1"},
    {"deconv_f32_to_bf16: src NULL", call_to_bf16_src_null, "src", NULL},
    {"deconv_f32_to_bf16: dst NULL", call_to_bf16_dst_null, "dst", NULL},
    {"deconv_bf16_to_f32: src NULL", call_to_f32_src_null, "src", NULL},
    {"deconv_bf16_to_f32: dst NULL", call_to_f32_dst_null, "dst", NULL},
    /* Single counters may be NULL (test_cache_stats_single_counters); not all three. */
    {"deconv_cache_stats: hits, misses and entries NULL", call_stats_all_null,
     "hits,misses,entries", NULL},
};

static void run_call_case(void **state) {
    const call_case *c = *state;
    outputs o, before;
    memset(&o, SENTINEL_BYTE, sizeof o);
    memcpy(&before, &o, sizeof o);
    prime_last_error();
    deconv_status st = c->call(&o);
    int bad = check_failure(c->name, st, INVALID, c->fields, c->value);
    if (st == DECONV_OK && memcmp(&o.handle, &before.handle, sizeof o.handle))
        deconv_destroy(o.handle); /* a create that should have failed */
    /* Named comparisons, so that a failure says which output was written. */
    static const struct {
        const char *name;
        size_t offset, size;
    } parts[] = {
        {"dst", offsetof(outputs, dst), sizeof o.dst},
        {"diff_src", offsetof(outputs, dsrc), sizeof o.dsrc},
        {"diff_weights", offsetof(outputs, dw), sizeof o.dw},
        {"diff_bias", offsetof(outputs, db), sizeof o.db},
        {"out_size", offsetof(outputs, out_size), sizeof o.out_size},
        {"sizes", offsetof(outputs, sizes), sizeof o.sizes},
        {"handle", offsetof(outputs, handle), sizeof o.handle},
        {"bf16 dst", offsetof(outputs, bf16), sizeof o.bf16},
        {"f32 dst", offsetof(outputs, f32), sizeof o.f32},
        {"hits", offsetof(outputs, hits), sizeof o.hits},
        {"misses", offsetof(outputs, misses), sizeof o.misses},
        {"entries", offsetof(outputs, entries), sizeof o.entries},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (memcmp((const char *)&o + parts[i].offset, (const char *)&before + parts[i].offset,
                   parts[i].size)) {
            print_error("%s: wrote %s\n", c->name, parts[i].name);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

size_t invalid_calls_tests(struct CMUnitTest **tests) {
    size_t n = sizeof call_cases / sizeof call_cases[0];
    *tests = calloc(n, sizeof **tests);
    assert_non_null(*tests);
    for (size_t i = 0; i < n; i++) {
        (*tests)[i].name = call_cases[i].name;
        (*tests)[i].test_func = run_call_case;
        (*tests)[i].initial_state = (void *)&call_cases[i];
    }
    return n;
}
