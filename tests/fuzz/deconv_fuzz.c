/*
 * libFuzzer target of the C API: the input bytes become a deconv_params (mostly small, valid-ish
 * values, sometimes huge, negative or garbage ones) and then a script of up to 32 calls, made the
 * way a careless caller would: NULL handles and buffers, invalid requests and passes, backward on
 * inference handles, calls after failed calls, forward before set_weights, re-created handles,
 * cache resizes in between.
 *
 * Besides the sanitizers (ASan + UBSan + LSan), every call is checked against the contract of
 * deconv.h, and a violation aborts (a crash for libFuzzer):
 *   - the status is one of deconv_status and never DECONV_INTERNAL_ERROR (documented as a bug);
 *   - a failing call sets a non-empty deconv_last_error() and leaves every output untouched
 *     (buffers, out_size, sizes, the handle out-parameter), a successful one leaves the message;
 *   - outputs whose request is DECONV_REQ_NULL are untouched;
 *   - the status is the one the contract predicts from the arguments (an oracle below): a call
 *     with a valid handle, valid requests and every buffer it needs must succeed, and a call
 *     missing any of them must fail with DECONV_INVALID_ARGUMENT.
 *
 * Buffers are never undersized: the C API cannot know buffer lengths (documented precondition).
 * "Correct" buffers are exactly the length deconv_buffer_sizes gives, either malloc'ed (ASan
 * redzones catch overruns by instrumented code) or ending at a PROT_NONE page (catches overruns
 * by oneDNN's uninstrumented JIT kernels and reorders too). Problems above the compute caps get
 * NULL buffers only: their calls exercise validation, never a real computation; valid problems
 * above the (much larger) create caps are not created at all (see CREATE_MAX_ELEMS).
 *
 * Input format (tests/fuzz/make_corpus.py writes seeds in it): a "value byte" v below 0xF0
 * selects a small value lo + v % (hi - lo + 1); v >= 0xF0 selects special[v - 0xF0], the last two
 * of which read 8 more bytes as a raw int64. Missing bytes read as 0.
 *   rank dtype layout mode no_bias batch groups ic_per_group oc_per_group
 *   3 x (in_size kernel stride pad dilate adj)           every dim, used or not
 *   target: one byte, >= 0xC0 then 3 value bytes (target_shape[d])
 *   struct_size byte (>= 0xF8 = wrong), buffer byte (bit 0 guard pages, bit 1 special floats,
 *   bits 2-7 data seed)
 *   then ops: op byte (% 11) followed by its argument bytes (see run_op).
 *
 * Reproducing a finding: build-fuzz/tests/fuzz/deconv_fuzz FILE runs one input;
 * DECONV_FUZZ_VERBOSE=1 prints its problem and every call first; DECONV_FUZZ_GUARD_PAGES=1 puts
 * every buffer against a guard page (see alloc_buffers).
 */
#include <deconv.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Compute caps: elements per buffer and multiply-adds per pass; inputs above either get NULL
 * buffers only. Keeps an execution well below a millisecond of arithmetic. */
#define MAX_ELEMS (1 << 14)
#define MAX_MACS (1 << 21)
#define MAX_OPS 32
/* Valid problems are created only up to these sizes: past them oneDNN alone spends seconds to
 * minutes generating code or descriptors, in proportion to one spatial extent, the batch or the
 * kernel (measured: 16 s for a width of 2^31-1, 33 s for a batch of 2^31-1, 150 s and 4 GB for
 * a kernel of 2^24 taps), which would turn the fuzzer into a benchmark of oneDNN. Element counts
 * may pass 2^31 (where oneDNN's int sizes overflow) by far. Invalid problems are always created
 * (and must fail). Extents go up to the library's own limit (2^24): a 1D training handle of 4
 * channels 2^22 wide once took 5.8 GB to create, past the fuzzer's 2 GB limit under ASan, while
 * oneDNN described brgconv kernels for it; the library no longer asks for them there
 * (impl/onednn_defects.hpp), and every wide 1D create measured since stays under 0.5 GB. */
#define CREATE_MAX_ELEMS (INT64_C(1) << 33)
#define CREATE_MAX_EXTENT (1 << 24)
/* A handle's creation times its candidate routes on full-size buffers, which takes time in
 * proportion to the batch even where the tensors are small (release build: 1 s for a batch of
 * 2^18 one-element images, 10 s for 2^22; 118 s under ASan). */
#define CREATE_MAX_BATCH (1 << 18)
#define CREATE_MAX_WEIGHTS (1 << 24)
#define CREATE_MAX_TAPS 4096

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "deconv_fuzz: contract violated: %s (line %d): ", #cond,   \
                    __LINE__);                                                         \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n  last error: %s\n", deconv_last_error());              \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* DECONV_FUZZ_VERBOSE=1: print each problem and call, to turn a crash input into a reproducer. */
static int verbose(void) {
    static int v = -1;
    if (v < 0) v = getenv("DECONV_FUZZ_VERBOSE") != NULL;
    return v;
}

static void print_dims(const char *name, const int64_t *v) {
    fprintf(stderr, " %s={%lld,%lld,%lld}", name, (long long)v[0], (long long)v[1], (long long)v[2]);
}

static void print_params(const deconv_params *p) {
    fprintf(stderr, "params: struct_size=%zu rank=%d batch=%lld in_channels=%lld out_channels=%lld groups=%lld",
            p->struct_size, (int)p->rank, (long long)p->batch, (long long)p->in_channels,
            (long long)p->out_channels, (long long)p->groups);
    print_dims("in_size", p->in_size);
    print_dims("kernel", p->kernel);
    print_dims("stride", p->stride);
    print_dims("pad", p->pad);
    print_dims("dilate", p->dilate);
    print_dims("adj", p->adj);
    print_dims("target_shape", p->target_shape);
    fprintf(stderr, " no_bias=%d dtype=%d layout=%d mode=%d\n", (int)p->no_bias, (int)p->dtype, (int)p->layout,
            (int)p->mode);
}

/* ---- input reader ---- */

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t u8(reader *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

static int64_t raw64(reader *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | u8(r);
    return (int64_t)v;
}

/* Values that sit on validation boundaries: overflow, the 2^40 extent limit, int32 limits. */
static int64_t special(reader *r, int which) {
    static const int64_t table[14] = {
            0, -1, 1, INT64_MAX, INT64_MIN, INT64_C(1) << 40, (INT64_C(1) << 40) + 1,
            INT32_MAX, (int64_t)INT32_MAX + 1, INT64_C(1) << 62, INT64_C(3037000500) /* ~sqrt 2^63 */,
            -(INT64_C(1) << 40), 65537, 4096};
    return which < 14 ? table[which] : raw64(r);
}

static int64_t value(reader *r, int64_t lo, int64_t hi, int *garbage) {
    uint8_t v = u8(r);
    if (v >= 0xF0) {
        if (garbage) *garbage = 1;
        return special(r, v - 0xF0);
    }
    return lo + v % (hi - lo + 1);
}

/* ---- buffers ---- */

typedef struct {
    void *p;      /* what the library sees; exactly `bytes` long */
    size_t bytes;
    void *base;   /* mmap base, or NULL when malloc'ed */
    size_t mapped;
    void *shadow; /* copy taken before a call, to prove a buffer untouched */
} buffer;

static size_t page_size(void) {
    static size_t page;
    if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

static void buffer_alloc(buffer *b, size_t bytes, int guarded) {
    memset(b, 0, sizeof *b);
    b->bytes = bytes;
    size_t len = bytes ? bytes : 1; /* zero-length buffers (bias of no_bias) are still non-NULL */
    if (guarded) {
        size_t page = page_size();
        b->mapped = (len + page - 1) / page * page + page;
        b->base = mmap(NULL, b->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b->base == MAP_FAILED) abort();
        char *guard = (char *)b->base + b->mapped - page;
        if (mprotect(guard, page, PROT_NONE)) abort();
        /* bytes is a multiple of the element size, so the start keeps 2- or 4-byte alignment */
        b->p = guard - (bytes ? bytes : 4);
    } else {
        b->p = malloc(len);
        if (!b->p) abort();
    }
    b->shadow = malloc(len);
    if (!b->shadow) abort();
}

static void buffer_free(buffer *b) {
    if (b->base)
        munmap(b->base, b->mapped);
    else
        free(b->p);
    free(b->shadow);
    memset(b, 0, sizeof *b);
}

static uint32_t xorshift(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* Small values in [-2, 2); with `specials`, 1 in 16 is NaN, an infinity, a denormal or huge. */
static void buffer_fill(buffer *b, int bf16, uint32_t seed, int specials) {
    static const float odd[4] = {NAN, INFINITY, 1e-40f, -3e38f};
    uint32_t s = seed * 2654435761u + 1u;
    size_t n = b->bytes / (bf16 ? 2 : 4);
    for (size_t i = 0; i < n; i++) {
        uint32_t x = xorshift(&s);
        float f = (float)(x >> 8) / (float)(1 << 22) - 2.f;
        if (specials && (x & 15) == 0) f = odd[(x >> 4) & 3];
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (bf16) {
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy((char *)b->p + 2 * i, &h, 2);
        } else {
            memcpy((char *)b->p + 4 * i, &bits, 4);
        }
    }
}

static void snapshot(buffer *b) { memcpy(b->shadow, b->p, b->bytes); }
static int untouched(const buffer *b) { return memcmp(b->shadow, b->p, b->bytes) == 0; }

/* ---- state of one input ---- */

enum { SRC, WEIGHTS, BIAS, DST, DIFF_DST, DIFF_SRC, DIFF_WEIGHTS, DIFF_BIAS, NBUF };

typedef struct {
    deconv_params p;
    int valid;       /* deconv_buffer_sizes accepted p */
    int computable;  /* valid and below the compute caps: real buffers allowed */
    int creatable;   /* invalid (create must refuse it), or valid and below the create caps */
    deconv_sizes sz;
    buffer buf[NBUF];
    deconv *h;
    int weights_set; /* deconv_set_weights succeeded on h */
    char last_error[512];
} state;

static int has_bias(const state *st) { return st->p.no_bias == 0; }
static int training(const state *st) { return st->p.mode == DECONV_TRAINING; }

static void remember_error(state *st) {
    snprintf(st->last_error, sizeof st->last_error, "%s", deconv_last_error());
}

/* The common checks of every fallible call. */
static void check_status(state *st, const char *call, deconv_status s, deconv_status want) {
    CHECK(s >= DECONV_OK && s <= DECONV_INTERNAL_ERROR, "%s returned %d", call, (int)s);
    CHECK(s != DECONV_INTERNAL_ERROR, "%s: DECONV_INTERNAL_ERROR", call);
    if (s == DECONV_OK) {
        CHECK(strcmp(st->last_error, deconv_last_error()) == 0, "%s succeeded but changed the message",
              call);
    } else {
        CHECK(deconv_last_error()[0] != '\0', "%s failed without a message", call);
    }
    /* Out of memory is always allowed; otherwise the oracle's prediction must hold. */
    if (s != DECONV_OUT_OF_MEMORY)
        CHECK(s == want, "%s returned %s, expected %s", call, deconv_status_string(s),
              deconv_status_string(want));
    remember_error(st);
}

/* A pointer argument: the buffer, or NULL when the selector bit is clear or the problem is too
 * big to compute. */
static void *pick(state *st, int which, unsigned bits, int bit) {
    if (!st->computable || !((bits >> bit) & 1)) return NULL;
    return st->buf[which].p;
}

/* A request: mostly valid, sometimes a value outside the enum. */
static deconv_req req_of(reader *r) {
    static const int bad[5] = {3, -1, 255, INT32_MAX, INT32_MIN};
    uint8_t v = u8(r);
    if (v < 0xF0) return (deconv_req)(v % 3);
    return (deconv_req)bad[(v - 0xF0) % 5];
}
static int req_valid(deconv_req r) { return (int)r >= 0 && (int)r <= 2; }

static void snapshot_outputs(state *st) {
    for (int i = 0; i < NBUF; i++)
        if (st->buf[i].p) snapshot(&st->buf[i]);
}
/* Outputs that must be untouched: all of `mask` on failure. */
static void check_untouched(state *st, const char *call, unsigned mask) {
    for (int i = 0; i < NBUF; i++)
        if ((mask >> i) & 1 && st->buf[i].p)
            CHECK(untouched(&st->buf[i]), "%s wrote buffer %d it must not touch", call, i);
}

static void alloc_buffers(state *st, uint8_t mode) {
    /* DECONV_FUZZ_GUARD_PAGES=1: every buffer ends at a guard page, whatever the input says (an
     * overrun by uninstrumented code then faults at once instead of depending on heap layout) */
    static int force_guard = -1;
    if (force_guard < 0) force_guard = getenv("DECONV_FUZZ_GUARD_PAGES") != NULL;
    if (force_guard) mode |= 1;
    const int bf16 = st->p.dtype == DECONV_BF16;
    const size_t es = bf16 ? 2 : 4;
    const int64_t n[NBUF] = {st->sz.src, st->sz.weights, st->sz.bias, st->sz.dst,
                             st->sz.dst, st->sz.src, st->sz.weights, st->sz.bias};
    for (int i = 0; i < NBUF; i++) {
        buffer_alloc(&st->buf[i], (size_t)n[i] * es, mode & 1);
        buffer_fill(&st->buf[i], bf16, (uint32_t)(mode >> 2) * 8u + (uint32_t)i, (mode >> 1) & 1);
    }
}

static void free_buffers(state *st) {
    for (int i = 0; i < NBUF; i++)
        if (st->buf[i].p) buffer_free(&st->buf[i]);
}

/* ---- the calls ---- */

#define SENTINEL_HANDLE ((deconv *)(uintptr_t)0x5e5e5e5eu)

/* What deconv_create must return for p, given what deconv_buffer_sizes said: the same. */
static deconv_status expected_create(deconv_status sizes_status) { return sizes_status; }

static int below_create_caps(const deconv_sizes *sz, const deconv_params *p) {
    int64_t taps = 1, out[DECONV_MAX_RANK];
    if (deconv_output_shape(p, out) != DECONV_OK) return 0; /* not reached: p is valid */
    for (int d = 0; d < p->rank; d++) {
        taps *= p->kernel[d]; /* p is valid: bounded by sz->weights */
        if (p->in_size[d] > CREATE_MAX_EXTENT || out[d] > CREATE_MAX_EXTENT) return 0;
    }
    if (p->batch > CREATE_MAX_BATCH) return 0;
    return sz->src <= CREATE_MAX_ELEMS && sz->dst <= CREATE_MAX_ELEMS && sz->weights <= CREATE_MAX_WEIGHTS &&
           taps <= CREATE_MAX_TAPS;
}

static void create(state *st, deconv_status sizes_status) {
    deconv *h = SENTINEL_HANDLE;
    st->h = NULL;
    st->weights_set = 0;
    if (!st->creatable) return;
    deconv_status s = deconv_create(&st->p, &h);
    if (verbose()) fprintf(stderr, "deconv_create: %s %s\n", deconv_status_string(s), s ? deconv_last_error() : "");
    if (s != DECONV_OK) CHECK(h == SENTINEL_HANDLE, "failed deconv_create wrote the handle");
    /* oneDNN may lack a kernel for a valid problem: UNSUPPORTED is the documented answer. */
    if (s == DECONV_UNSUPPORTED && sizes_status == DECONV_OK) {
        check_status(st, "deconv_create", s, s);
        return;
    }
    check_status(st, "deconv_create", s, expected_create(sizes_status));
    if (s == DECONV_OK) {
        CHECK(h != NULL && h != SENTINEL_HANDLE, "deconv_create succeeded without a handle");
        st->h = h;
    }
}

static void op_set_weights(state *st, reader *r) {
    unsigned bits = u8(r);
    deconv *h = (bits & 1) ? NULL : st->h;
    const void *w = pick(st, WEIGHTS, bits, 1), *b = pick(st, BIAS, bits, 2);
    int ok = h && w && (has_bias(st) ? b != NULL : b == NULL);
    snapshot_outputs(st);
    deconv_status s = deconv_set_weights(h, w, b);
    check_status(st, "deconv_set_weights", s, ok ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    check_untouched(st, "deconv_set_weights", ~0u); /* it only reads */
    if (s == DECONV_OK) st->weights_set = 1;
}

static void op_forward(state *st, reader *r) {
    unsigned bits = u8(r);
    deconv_req req = req_of(r);
    deconv *h = (bits & 1) ? NULL : st->h;
    const void *src = pick(st, SRC, bits, 1), *w = pick(st, WEIGHTS, bits, 2), *b = pick(st, BIAS, bits, 3);
    void *dst = pick(st, DST, bits, 4);
    int ok = h && req_valid(req) && src && (req == DECONV_REQ_NULL || dst);
    if (w)
        ok = ok && (has_bias(st) ? b != NULL : b == NULL);
    else
        ok = ok && st->weights_set && b == NULL;
    snapshot_outputs(st);
    deconv_status s = deconv_forward(h, src, w, b, dst, req);
    check_status(st, "deconv_forward", s, ok ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    unsigned must_keep = ~0u;
    if (s == DECONV_OK && req != DECONV_REQ_NULL) must_keep &= ~(1u << DST);
    check_untouched(st, "deconv_forward", must_keep);
}

static void op_backward(state *st, reader *r) {
    unsigned bits = u8(r) | (unsigned)u8(r) << 8;
    deconv_req rs = req_of(r), rw = req_of(r), rb = req_of(r);
    deconv *h = (bits & 1) ? NULL : st->h;
    const void *src = pick(st, SRC, bits, 1), *w = pick(st, WEIGHTS, bits, 2), *dd = pick(st, DIFF_DST, bits, 3);
    void *ds = pick(st, DIFF_SRC, bits, 4), *dw = pick(st, DIFF_WEIGHTS, bits, 5), *db = pick(st, DIFF_BIAS, bits, 6);
    int ok = h && req_valid(rs) && req_valid(rw) && req_valid(rb) && training(st);
    ok = ok && (has_bias(st) || rb == DECONV_REQ_NULL);
    int any = rs != DECONV_REQ_NULL || rw != DECONV_REQ_NULL || rb != DECONV_REQ_NULL;
    if (any) ok = ok && dd;
    if (rs != DECONV_REQ_NULL) ok = ok && w && ds;
    if (rw != DECONV_REQ_NULL) ok = ok && src && dw;
    if (rb != DECONV_REQ_NULL) ok = ok && db;
    snapshot_outputs(st);
    deconv_status s = deconv_backward(h, src, w, dd, ds, rs, dw, rw, db, rb);
    check_status(st, "deconv_backward", s, ok ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    unsigned must_keep = ~0u;
    if (s == DECONV_OK) {
        if (rs != DECONV_REQ_NULL) must_keep &= ~(1u << DIFF_SRC);
        if (rw != DECONV_REQ_NULL) must_keep &= ~(1u << DIFF_WEIGHTS);
        if (rb != DECONV_REQ_NULL) must_keep &= ~(1u << DIFF_BIAS);
    }
    check_untouched(st, "deconv_backward", must_keep);
}

static void op_impl_name(state *st, reader *r) {
    uint8_t v = u8(r);
    deconv *h = (v & 1) ? NULL : st->h;
    int pass = (v >> 1) % 4 == 3 ? (int)(int8_t)v : (v >> 1) % 4; /* 0..2, or garbage */
    int ok = h && pass >= 0 && pass <= 2 && (pass == DECONV_PASS_FORWARD || training(st));
    const char *name = deconv_impl_name(h, (deconv_pass)pass);
    if (ok) {
        CHECK(name && name[0], "deconv_impl_name(pass %d) gave no name", pass);
        CHECK(strcmp(st->last_error, deconv_last_error()) == 0, "deconv_impl_name succeeded but changed the message");
    } else {
        CHECK(name == NULL, "deconv_impl_name(pass %d) gave \"%s\" for a pass it lacks", pass, name);
        CHECK(deconv_last_error()[0] != '\0', "deconv_impl_name failed without a message");
    }
    remember_error(st);
}

/* Destroy and create again, sometimes with the other mode (same buffer sizes). */
static void op_recreate(state *st, reader *r) {
    uint8_t v = u8(r);
    deconv_destroy(st->h);
    st->h = NULL;
    if (v & 1) st->p.mode = st->p.mode == DECONV_TRAINING ? DECONV_INFERENCE : DECONV_TRAINING;
    deconv_sizes sz;
    deconv_status sizes_status = deconv_buffer_sizes(&st->p, &sz);
    remember_error(st);
    /* a garbage mode became a valid one; buffers stay as they were (none if p was invalid) */
    st->valid = sizes_status == DECONV_OK;
    st->creatable = !st->valid || below_create_caps(&sz, &st->p);
    create(st, sizes_status);
}

/* The query functions with NULL arguments. */
static void op_queries(state *st, reader *r) {
    uint8_t v = u8(r);
    int64_t out[DECONV_MAX_RANK] = {-7, -7, -7};
    deconv_sizes sz = {-7, -7, -7, -7};
    const deconv_params *p = (v & 1) ? NULL : &st->p;
    deconv_status s = deconv_output_shape(p, (v & 2) ? NULL : out);
    check_status(st, "deconv_output_shape", s, p && st->valid && !(v & 2) ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    if (s != DECONV_OK) CHECK(out[0] == -7 && out[1] == -7 && out[2] == -7, "failed deconv_output_shape wrote out_size");
    s = deconv_buffer_sizes(p, (v & 4) ? NULL : &sz);
    check_status(st, "deconv_buffer_sizes", s, p && st->valid && !(v & 4) ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    if (s != DECONV_OK) CHECK(sz.src == -7 && sz.weights == -7 && sz.bias == -7 && sz.dst == -7, "failed deconv_buffer_sizes wrote sizes");
    deconv *h = SENTINEL_HANDLE;
    const deconv_params *cp = (v & 8) ? NULL : p;
    if (cp && !(v & 16) && !st->creatable) return;
    s = deconv_create(cp, (v & 16) ? NULL : &h);
    if (s == DECONV_OK) deconv_destroy(h);
    CHECK(s != DECONV_INTERNAL_ERROR, "deconv_create: DECONV_INTERNAL_ERROR");
    if ((v & 8) || (v & 16) || !p) check_status(st, "deconv_create", s, DECONV_INVALID_ARGUMENT);
    remember_error(st);
    deconv_destroy(NULL);
}

/* The process-wide cache: resize (evicting what the handle uses), stats with NULLs, clear. */
static void op_cache(state *st, reader *r) {
    uint8_t v = u8(r);
    uint64_t a = 0, b = 0, c = 0;
    switch (v % 4) {
    case 0: check_status(st, "deconv_cache_set_capacity", deconv_cache_set_capacity((v >> 2) % 5), DECONV_OK); break;
    case 1: check_status(st, "deconv_cache_set_capacity", deconv_cache_set_capacity(64), DECONV_OK); break;
    case 2: check_status(st, "deconv_cache_clear", deconv_cache_clear(), DECONV_OK); break;
    case 3: {
        unsigned m = (v >> 2) & 7;
        deconv_status s = deconv_cache_stats(m & 1 ? &a : NULL, m & 2 ? &b : NULL, m & 4 ? &c : NULL);
        check_status(st, "deconv_cache_stats", s, m ? DECONV_OK : DECONV_INVALID_ARGUMENT);
        if (m & 4) CHECK(c <= deconv_cache_capacity(), "cache holds %llu entries, capacity %zu",
                         (unsigned long long)c, deconv_cache_capacity());
        break;
    }
    }
}

/* bf16 conversions on the buffers: counts within their lengths, NULLs, count 0. */
static void op_convert(state *st, reader *r) {
    uint8_t v = u8(r);
    if (!st->computable) return;
    buffer *from = &st->buf[v % NBUF], *to = &st->buf[(v >> 3) % NBUF];
    /* float pointers must be aligned (a C rule, not the library's): bf16 problems' buffers
     * ending at a guard page may start at 2 mod 4 */
    if (from == to || ((uintptr_t)from->p | (uintptr_t)to->p) & 3) return;
    size_t n = from->bytes / 4 < to->bytes / 2 ? from->bytes / 4 : to->bytes / 2; /* f32 -> bf16 */
    if (v & 0x40) n = 0;
    const float *f = (v & 0x80) ? NULL : from->p;
    deconv_status s = deconv_f32_to_bf16(f, to->p, n);
    check_status(st, "deconv_f32_to_bf16", s, n == 0 || f ? DECONV_OK : DECONV_INVALID_ARGUMENT);
    n = from->bytes / 2 < to->bytes / 4 ? from->bytes / 2 : to->bytes / 4; /* bf16 -> f32 */
    s = deconv_bf16_to_f32(from->p, (v & 0x80) ? NULL : to->p, n);
    check_status(st, "deconv_bf16_to_f32", s, n == 0 || !(v & 0x80) ? DECONV_OK : DECONV_INVALID_ARGUMENT);
}

static void op_misc(state *st, reader *r) {
    uint8_t v = u8(r);
    const char *name = deconv_status_string((deconv_status)(int)(int8_t)v);
    CHECK(name && name[0], "deconv_status_string(%d) gave no string", (int)(int8_t)v);
    CHECK(deconv_version() == DECONV_VERSION, "version %u", deconv_version());
    const deconv_api *api = deconv_get_api(v & 1 ? DECONV_API_VERSION : v);
    if ((v & 1) || v == DECONV_API_VERSION)
        CHECK(api && api->api_version == DECONV_API_VERSION && api->forward == deconv_forward, "deconv_get_api");
    else
        CHECK(api == NULL && deconv_last_error()[0], "deconv_get_api(%u) gave a table", v);
    remember_error(st);
}

static void run_op(state *st, reader *r) {
    static const char *names[11] = {"set_weights", "forward", "forward", "backward", "backward", "impl_name",
                                    "recreate", "queries", "cache", "convert", "misc"};
    const int op = u8(r) % 11;
    if (verbose()) {
        fprintf(stderr, "op %s, argument bytes:", names[op]);
        for (size_t i = 0; i < r->n && i < 6; i++) fprintf(stderr, " %02x", r->p[i]);
        fprintf(stderr, "\n");
    }
    switch (op) {
    case 0: op_set_weights(st, r); break;
    case 1: case 2: op_forward(st, r); break;
    case 3: case 4: op_backward(st, r); break;
    case 5: op_impl_name(st, r); break;
    case 6: op_recreate(st, r); break;
    case 7: op_queries(st, r); break;
    case 8: op_cache(st, r); break;
    case 9: op_convert(st, r); break;
    default: op_misc(st, r); break;
    }
}

/* ---- params ---- */

static void read_params(deconv_params *p, reader *r) {
    deconv_params_init(p);
    int g = 0;
    p->rank = (int32_t)value(r, 1, 3, NULL);
    p->dtype = (deconv_dtype)(int)value(r, 0, 1, NULL);
    p->layout = (deconv_layout)(int)value(r, 0, 1, NULL);
    p->mode = (deconv_mode)(int)value(r, 0, 1, NULL);
    p->no_bias = (int32_t)value(r, 0, 1, NULL);
    p->batch = value(r, 1, 3, NULL);
    int64_t groups = value(r, 1, 4, &g);
    int gi = 0, go = 0;
    int64_t ic = value(r, 1, 4, &gi), oc = value(r, 1, 4, &go);
    p->groups = groups;
    /* per-group counts, so that small values always divide; garbage goes through as it is */
    p->in_channels = gi || g ? ic : ic * groups;
    p->out_channels = go || g ? oc : oc * groups;
    for (int d = 0; d < DECONV_MAX_RANK; d++) {
        p->in_size[d] = value(r, 1, 6, NULL);
        p->kernel[d] = value(r, 1, 5, NULL);
        p->stride[d] = value(r, 1, 4, NULL);
        p->pad[d] = value(r, 0, 3, NULL);
        p->dilate[d] = value(r, 1, 3, NULL);
        p->adj[d] = value(r, 0, 3, NULL);
    }
    if (u8(r) >= 0xC0)
        for (int d = 0; d < DECONV_MAX_RANK; d++) p->target_shape[d] = value(r, 1, 16, NULL);
    uint8_t s = u8(r);
    if (s >= 0xF8) {
        static const size_t wrong[8] = {0, 1, sizeof(deconv_params) - 8, sizeof(deconv_params) + 8,
                                        sizeof(deconv_params) / 2, SIZE_MAX, 8, 4096};
        p->struct_size = wrong[s - 0xF8];
    }
}

static int below_caps(const deconv_sizes *sz, const deconv_params *p) {
    if (sz->src > MAX_ELEMS || sz->weights > MAX_ELEMS || sz->dst > MAX_ELEMS || sz->bias > MAX_ELEMS) return 0;
    /* every pass multiplies each input element by (out_channels / groups) * prod(kernel) */
    int64_t per_input = sz->weights / p->in_channels;
    return sz->src * per_input <= MAX_MACS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    state st;
    memset(&st, 0, sizeof st);
    read_params(&st.p, &r);
    uint8_t mode = u8(&r);
    if (verbose()) print_params(&st.p);
    remember_error(&st);

    int64_t out[DECONV_MAX_RANK] = {-7, -7, -7};
    deconv_status shape_status = deconv_output_shape(&st.p, out);
    CHECK(shape_status != DECONV_INTERNAL_ERROR, "deconv_output_shape: DECONV_INTERNAL_ERROR");
    remember_error(&st);
    deconv_status sizes_status = deconv_buffer_sizes(&st.p, &st.sz);
    CHECK(sizes_status == shape_status, "deconv_output_shape said %s, deconv_buffer_sizes %s",
          deconv_status_string(shape_status), deconv_status_string(sizes_status));
    CHECK(sizes_status == DECONV_OK || sizes_status == DECONV_INVALID_ARGUMENT, "deconv_buffer_sizes: %s",
          deconv_status_string(sizes_status));
    remember_error(&st);
    st.valid = sizes_status == DECONV_OK;
    if (st.valid) {
        CHECK(st.sz.src >= 1 && st.sz.weights >= 1 && st.sz.dst >= 1 && st.sz.bias == (has_bias(&st) ? st.p.out_channels : 0),
              "sizes %lld %lld %lld %lld", (long long)st.sz.src, (long long)st.sz.weights, (long long)st.sz.bias,
              (long long)st.sz.dst);
        for (int d = 0; d < st.p.rank; d++) CHECK(out[d] >= 1, "out_size[%d] = %lld", d, (long long)out[d]);
        st.computable = below_caps(&st.sz, &st.p);
    }
    st.creatable = !st.valid || below_create_caps(&st.sz, &st.p);
    if (st.computable) alloc_buffers(&st, mode);

    create(&st, sizes_status);
    for (int i = 0; i < MAX_OPS && r.n; i++) run_op(&st, &r);

    deconv_destroy(st.h);
    free_buffers(&st);
    return 0;
}
