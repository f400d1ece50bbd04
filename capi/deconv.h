/*
 * libdeconv: transposed convolution ("deconvolution") on the CPU, with the semantics of MXNet's
 * Deconvolution operator, built on oneDNN.
 *
 * Conventions of every function below:
 * - A fallible call returns a deconv_status; DECONV_OK is 0. On failure deconv_last_error()
 *   (thread-local) names the offending field and value, and no output buffer was written.
 * - No C++ exception, abort or exit ever leaves the library.
 * - Buffers are dense, in the handle's layout and data type (bf16 as raw 16-bit words).
 * - Spatial arrays (in_size, kernel, ...) use their first `rank` entries, outermost first:
 *   w (1D), h,w (2D), d,h,w (3D).
 * - Any thread may call; inside an OpenMP parallel region of the caller only problems small
 *   enough for one thread run (else DECONV_UNSUPPORTED: oneDNN 2.6 cannot run there kernels
 *   built for more threads).
 */
#ifndef DECONV_H
#define DECONV_H

#include <stddef.h>
#include <stdint.h>

#define DECONV_VERSION_MAJOR 0
#define DECONV_VERSION_MINOR 1
#define DECONV_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, the value deconv_version() returns. */
#define DECONV_VERSION \
    (DECONV_VERSION_MAJOR * 10000 + DECONV_VERSION_MINOR * 100 + DECONV_VERSION_PATCH)

#define DECONV_MAX_RANK 3

#if defined(DECONV_BUILDING_LIBRARY)
#define DECONV_EXPORT __attribute__((visibility("default")))
#else
#define DECONV_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct deconv deconv; /* opaque handle */

typedef enum deconv_status {
    DECONV_OK = 0,
    DECONV_INVALID_ARGUMENT = 1, /* a parameter, pointer or request is not acceptable */
    DECONV_UNSUPPORTED = 2,      /* valid, but this build or CPU cannot do it (e.g. bf16) */
    DECONV_OUT_OF_MEMORY = 3,
    DECONV_INTERNAL_ERROR = 4 /* a bug or an unexpected oneDNN failure */
} deconv_status;

typedef enum deconv_dtype { DECONV_F32 = 0, DECONV_BF16 = 1 } deconv_dtype;

/* Layout of data tensors (src, dst and their gradients). Weights are always
 * (in_channels, out_channels / groups, kernel...) and bias (out_channels), whatever the layout. */
typedef enum deconv_layout {
    DECONV_CHANNELS_FIRST = 0, /* NCW / NCHW / NCDHW */
    DECONV_CHANNELS_LAST = 1   /* NWC / NHWC / NDHWC */
} deconv_layout;

typedef enum deconv_mode {
    DECONV_INFERENCE = 0, /* forward only; weights may be packed once by deconv_set_weights */
    DECONV_TRAINING = 1   /* forward and backward */
} deconv_mode;

typedef enum deconv_req {
    DECONV_REQ_NULL = 0,  /* compute nothing for this output; its buffer is untouched, may be NULL */
    DECONV_REQ_WRITE = 1, /* overwrite the buffer */
    DECONV_REQ_ADD = 2    /* add the result to what the buffer holds */
} deconv_req;

typedef enum deconv_pass {
    DECONV_PASS_FORWARD = 0,
    DECONV_PASS_BACKWARD_DATA = 1,
    DECONV_PASS_BACKWARD_WEIGHTS = 2 /* weights and bias gradients */
} deconv_pass;

/* Problem description. Always start from deconv_params_init(): struct_size must equal
 * sizeof(deconv_params) of the header the caller was compiled with (this version accepts exactly
 * its own size). Batch, channels and groups above 2^31-1, spatial values (in_size, kernel, stride,
 * pad, dilate, adj, target_shape, and the full output extent stride*(in-1)+dilate*(kernel-1)+1)
 * above 2^24, and tensors above 2^40 bytes, are refused. */
typedef struct deconv_params {
    size_t struct_size; /* sizeof(deconv_params), set by deconv_params_init */
    int32_t rank;       /* number of spatial dimensions: 1, 2 or 3 */
    int64_t batch;
    int64_t in_channels;
    int64_t out_channels; /* MXNet num_filter */
    int64_t groups;       /* MXNet num_group; divides in_channels and out_channels */
    int64_t in_size[DECONV_MAX_RANK];
    int64_t kernel[DECONV_MAX_RANK];
    int64_t stride[DECONV_MAX_RANK];
    int64_t pad[DECONV_MAX_RANK];    /* removed from both ends of the output */
    int64_t dilate[DECONV_MAX_RANK]; /* 1-based: 1 = no dilation */
    int64_t adj[DECONV_MAX_RANK];    /* extra output at the high end, < stride */
    /* When any of the first `rank` entries is non-zero, all must be, and pad/adj are derived
     * from it as MXNet's InferPad does (the given pad and adj are then ignored). */
    int64_t target_shape[DECONV_MAX_RANK];
    int32_t no_bias; /* non-zero: no bias */
    deconv_dtype dtype;
    deconv_layout layout;
    deconv_mode mode;
} deconv_params;

/* Element counts of the buffers a problem uses (bias is 0 when no_bias). */
typedef struct deconv_sizes {
    int64_t src;     /* batch * in_channels * prod(in_size) */
    int64_t weights; /* in_channels * out_channels / groups * prod(kernel) */
    int64_t bias;    /* out_channels, or 0 */
    int64_t dst;     /* batch * out_channels * prod(out_size) */
} deconv_sizes;

/* Defaults: rank 2, batch 1, channels 1, groups 1, in_size/kernel 1, stride 1, dilate 1,
 * pad/adj/target_shape 0, bias on, f32, channels-first, inference. */
DECONV_EXPORT deconv_status deconv_params_init(deconv_params *params);

/* Output spatial size (first `rank` entries of out_size written) without creating anything. */
DECONV_EXPORT deconv_status deconv_output_shape(const deconv_params *params,
                                                int64_t out_size[DECONV_MAX_RANK]);

/* Element counts of src, weights, bias and dst for a valid problem. */
DECONV_EXPORT deconv_status deconv_buffer_sizes(const deconv_params *params, deconv_sizes *sizes);

DECONV_EXPORT deconv_status deconv_create(const deconv_params *params, deconv **handle);

/* NULL is a no-op. */
DECONV_EXPORT void deconv_destroy(deconv *handle);

/* Keep weights (and bias; NULL when no_bias) in the handle, packed once into the forward
 * primitive's preferred layout; deconv_forward with weights == NULL then uses them. The
 * caller's buffers are not referenced after the call. Not to be called while another thread
 * runs this handle's forward. */
DECONV_EXPORT deconv_status deconv_set_weights(deconv *handle, const void *weights,
                                               const void *bias);

/* dst (req) = deconvolution(src, weights) + bias.
 * weights == NULL uses the weights of deconv_set_weights (and its bias; bias must then be NULL);
 * otherwise weights and, unless no_bias, bias are required. bias must be NULL when no_bias. */
DECONV_EXPORT deconv_status deconv_forward(deconv *handle, const void *src, const void *weights,
                                           const void *bias, void *dst, deconv_req req);

/* Training handles only. Gradients of the forward pass given diff_dst:
 *   diff_src (req_src)         needs weights and diff_dst
 *   diff_weights (req_weights) needs src and diff_dst; weights are (in_ch, out_ch/groups, k...)
 *   diff_bias (req_bias)       needs diff_dst; must be DECONV_REQ_NULL when no_bias
 * Any output whose req is DECONV_REQ_NULL is not written and may be NULL, as may an input
 * that no requested output needs. */
DECONV_EXPORT deconv_status deconv_backward(deconv *handle, const void *src, const void *weights,
                                            const void *diff_dst, void *diff_src,
                                            deconv_req req_src, void *diff_weights,
                                            deconv_req req_weights, void *diff_bias,
                                            deconv_req req_bias);

/* The oneDNN implementation chosen for a pass and, for oneDNN's deconvolution, the layout its data
 * is in (e.g. "jit:avx512_core on nChw16c", "matmul:brg:avx512_core",
 * "jit:avx512_core on nhwc (batch in 8 chunks)"), valid for the handle's lifetime; NULL (with
 * deconv_last_error set) for a NULL handle or a pass the handle lacks (backward passes of an
 * inference handle). */
DECONV_EXPORT const char *deconv_impl_name(const deconv *handle, deconv_pass pass);

/* Message of the last failed call on this thread ("" if none). */
DECONV_EXPORT const char *deconv_last_error(void);

/* "DECONV_OK", "DECONV_INVALID_ARGUMENT", ...; "unknown status" for other values. */
DECONV_EXPORT const char *deconv_status_string(deconv_status status);

/* DECONV_VERSION of the library actually loaded. */
DECONV_EXPORT uint32_t deconv_version(void);

/* Non-zero: every CPU runs bf16 problems. Where oneDNN has no bf16 kernels (no AVX-512) they
 * compute in f32 on converted copies, rounding each result to bf16 once (kept for callers of
 * earlier versions, which refused bf16 there). */
DECONV_EXPORT int deconv_bf16_supported(void);

/* Round to nearest even; NaN stays NaN. */
DECONV_EXPORT deconv_status deconv_f32_to_bf16(const float *src, uint16_t *dst, size_t count);
DECONV_EXPORT deconv_status deconv_bf16_to_f32(const uint16_t *src, float *dst, size_t count);

/* The process-wide primitive cache: bounded, least recently used entry evicted first, shared by
 * handles with equal problems. Default capacity 64 entries, or DECONV_CACHE_CAPACITY from the
 * environment at first use. Capacity 0 disables caching. Shrinking evicts at once. Handles keep
 * the primitives they hold after an eviction. */
DECONV_EXPORT deconv_status deconv_cache_set_capacity(size_t capacity);
/* Any one of the counters may be NULL (not all three). */
DECONV_EXPORT deconv_status deconv_cache_stats(uint64_t *hits, uint64_t *misses,
                                               uint64_t *entries);
/* The current capacity (entries). */
DECONV_EXPORT size_t deconv_cache_capacity(void);
/* Drops every entry and zeroes the hit and miss counters. */
DECONV_EXPORT deconv_status deconv_cache_clear(void);

/* ---- dlopen clients: resolve deconv_get_api alone. ---- */

#define DECONV_API_VERSION 1

typedef struct deconv_api {
    uint32_t api_version;     /* DECONV_API_VERSION */
    uint32_t library_version; /* DECONV_VERSION */
    deconv_status (*params_init)(deconv_params *);
    deconv_status (*output_shape)(const deconv_params *, int64_t *);
    deconv_status (*buffer_sizes)(const deconv_params *, deconv_sizes *);
    deconv_status (*create)(const deconv_params *, deconv **);
    void (*destroy)(deconv *);
    deconv_status (*set_weights)(deconv *, const void *, const void *);
    deconv_status (*forward)(deconv *, const void *, const void *, const void *, void *,
                             deconv_req);
    deconv_status (*backward)(deconv *, const void *, const void *, const void *, void *,
                              deconv_req, void *, deconv_req, void *, deconv_req);
    const char *(*impl_name)(const deconv *, deconv_pass);
    const char *(*last_error)(void);
    const char *(*status_string)(deconv_status);
    uint32_t (*version)(void);
    int (*bf16_supported)(void);
    deconv_status (*f32_to_bf16)(const float *, uint16_t *, size_t);
    deconv_status (*bf16_to_f32)(const uint16_t *, float *, size_t);
    deconv_status (*cache_set_capacity)(size_t);
    deconv_status (*cache_stats)(uint64_t *, uint64_t *, uint64_t *);
    deconv_status (*cache_clear)(void);
    size_t (*cache_capacity)(void);
} deconv_api;

typedef const deconv_api *(*deconv_get_api_fn)(uint32_t api_version);

/* The function table for api_version (DECONV_API_VERSION), or NULL (with deconv_last_error set)
 * for a version this library does not provide. */
DECONV_EXPORT const deconv_api *deconv_get_api(uint32_t api_version);

#ifdef __cplusplus
}
#endif

#endif /* DECONV_H */
