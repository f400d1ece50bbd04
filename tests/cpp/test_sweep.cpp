// Seeded random sweep: small problems across rank 1-3, groups (incl. depthwise), stride, pad,
// dilate, adj, target_shape and bias, in f32 and bf16 (when the CPU runs it), both layouts, and
// every request (write / add / null) for each pass: forward, backward data, backward weights
// and bias. Every output is compared with the naive reference (tolerance: harness.hpp).
//
// 16 shards x 20 problems = 320 problems; each runs in f32 and, when supported, in bf16 (with
// the other layout). A failure prints the problem, dtype, layout, requests and implementation;
// problem i of the sweep is generated from seed kSeed + i alone, so it is reproducible.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <random>

#include "harness.hpp"

using namespace harness;

namespace {

constexpr uint64_t kSeed = 20240601;
constexpr int kShards = 16, kPerShard = 20;
constexpr uint64_t kWideSeed = 777000;
constexpr int kWideShards = 4, kWidePerShard = 12;

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// A valid problem (output >= 1 in every dim), small enough for the reference. `wide` problems
// have up to 40 channels (more than one 16-channel block, and not a multiple of it, which is
// where oneDNN's blocked layouts pad) and smaller spatial sizes.
Problem random_problem(std::mt19937_64& rng, bool wide = false) {
    const int64_t c_max = wide ? 40 : 6, dw_max = wide ? 40 : 8, cg_max = wide ? 12 : 3;
    for (;;) {
        Problem p;
        p.rank = static_cast<int>(pick(rng, 1, 3));
        p.batch = pick(rng, 1, wide ? 2 : 3);
        switch (pick(rng, 0, 3)) {
        case 0:  // depthwise: groups == in == out
            p.groups = p.in_channels = p.out_channels = pick(rng, 1, dw_max);
            break;
        case 1:  // grouped
            p.groups = pick(rng, 2, wide ? 4 : 3);
            p.in_channels = p.groups * pick(rng, 1, cg_max);
            p.out_channels = p.groups * pick(rng, 1, cg_max);
            break;
        default:
            p.in_channels = pick(rng, 1, c_max);
            p.out_channels = pick(rng, 1, c_max);
        }
        const int64_t max_in = wide ? (p.rank == 1 ? 6 : p.rank == 2 ? 4 : 3)
                                    : (p.rank == 1 ? 9 : p.rank == 2 ? 6 : 4);
        const int64_t max_k = p.rank == 3 ? 3 : 4;
        const bool target = pick(rng, 0, 4) == 0;
        bool ok = true;
        for (int d = 0; d < p.rank; ++d) {
            p.in_size[d] = pick(rng, 1, max_in);
            p.kernel[d] = pick(rng, 1, max_k);
            p.stride[d] = pick(rng, 1, 3);
            p.dilate[d] = pick(rng, 0, 3) == 0 ? pick(rng, 2, 3) : 1;
            const int64_t dk = p.dilate[d] * (p.kernel[d] - 1) + 1;
            const int64_t full = p.stride[d] * (p.in_size[d] - 1) + dk;
            p.pad[d] = pick(rng, 0, dk / 2 + 1);
            p.adj[d] = pick(rng, 0, p.stride[d] - 1);
            if (target) p.target_shape[d] = pick(rng, std::max<int64_t>(1, full - 2 * dk), full);
            if (!target && full - 2 * p.pad[d] + p.adj[d] < 1) ok = false;
        }
        p.bias = pick(rng, 0, 1) == 1;
        if (ok) return p;
    }
}

constexpr uint64_t kMatrixSeed = 4242000;

// index >= 0: problem `index` of the sweep; -1000 < index < 0: wide problem -1 - index;
// index <= -1000: matrix-product problem -1000 - index.
std::string describe(int index, const Problem& p, deconv_dtype dt, deconv_layout l) {
    const std::string which =
        index >= 0      ? "sweep problem " + std::to_string(index) + " (seed " + std::to_string(kSeed + index) + ")"
        : index > -1000 ? "wide sweep problem " + std::to_string(-1 - index) + " (seed " +
                              std::to_string(kWideSeed - 1 - index) + ")"
                        : "matrix-product problem " + std::to_string(-1000 - index) + " (seed " +
                              std::to_string(kMatrixSeed - 1000 - index) + ")";
    return which + ": " + naive::to_string(p) + " dtype=" + dtype_str(dt) + " layout=" + layout_str(l);
}

// deconv_params entries past `rank`, filled with values that would be invalid if used.
void junk_unused_entries(deconv_params& prm) {
    for (int d = prm.rank; d < DECONV_MAX_RANK; ++d) {
        prm.in_size[d] = -5;
        prm.kernel[d] = 0;
        prm.stride[d] = -1;
        prm.pad[d] = 1000;
        prm.dilate[d] = 0;
        prm.adj[d] = 77;
        prm.target_shape[d] = 3;
    }
}

// One output of a pass: how it is requested and what the buffer held before.
struct Out {
    deconv_req req;
    bool null_ptr;  // for REQ_NULL: pass NULL instead of a sentinel buffer
    Buffer buf;
    Vec prefill;  // library layout, for ADD
    Out(deconv_dtype dt, size_t n, deconv_req r, bool np, std::mt19937_64& rng)
        : req(r), null_ptr(np && r == DECONV_REQ_NULL), buf(dt, n) {
        if (r == DECONV_REQ_ADD) {
            prefill = random_values(rng, n, dt);
            buf.set(prefill);
        } else {
            buf.fill_sentinel();  // WRITE must overwrite it, NULL must leave it
        }
    }
    void* ptr() { return null_ptr ? nullptr : buf.data(); }
};

// Checks one output. `to_cf` turns the library-layout buffer/prefill into channels-first.
template <class ToCf>
void check_out(const char* what, Out& o, const Expected& e, deconv_dtype dt, ToCf to_cf) {
    SCOPED_TRACE(std::string(what) + " req=" + req_str(o.req) + (o.null_ptr ? " (NULL)" : ""));
    EXPECT_TRUE(o.buf.guards_intact()) << what << ": written out of bounds";
    if (o.req == DECONV_REQ_NULL) {
        EXPECT_TRUE(o.buf.is_sentinel()) << what << ": written although its req is null";
        return;
    }
    const Vec got = to_cf(o.buf.get());
    if (o.req == DECONV_REQ_ADD) {
        const Vec pre = to_cf(o.prefill);
        EXPECT_TRUE(compare(what, got, e, dt, &pre));
    } else {
        EXPECT_TRUE(compare(what, got, e, dt));
    }
}

// Passes that ran as the subpixel convolution (impl/subpixel_formulation.hpp), counted so that
// the sweep pinned to it (cpp_sweep_formulation_subpixel*) shows it ran; and whether oneDNN ran
// it on AMX (where its bf16 weight gradient takes channels-last data).
int subpixel_forwards = 0, subpixel_weight_gradients = 0;
bool subpixel_on_amx = false;
// Forward and data-gradient passes that ran as the library's own depthwise kernels
// (impl/depthwise_formulation.hpp).
int depthwise_forwards = 0, depthwise_data_gradients = 0, depthwise_weight_gradients = 0;

bool pinned_to(const char* formulation) {
    const char* pinned = std::getenv("DECONV_FORMULATION");
    return pinned && std::string(pinned) == formulation;
}

void run_case(int index, const Problem& p, deconv_dtype dt, deconv_layout l, std::mt19937_64& rng) {
    SCOPED_TRACE(describe(index, p, dt, l));
    const Vec src = random_values(rng, naive::src_elems(p), dt);
    const Vec w = random_values(rng, naive::weights_elems(p), dt);
    const Vec bias = p.bias ? random_values(rng, p.out_channels, dt) : Vec{};
    const Vec dd = random_values(rng, naive::dst_elems(p), dt);
    const auto out = naive::output_size(p);
    auto src_cf = [&](const Vec& v) { return from_layout(p, l, v, p.in_channels, p.in_size); };
    auto dst_cf = [&](const Vec& v) { return from_layout(p, l, v, p.out_channels, out); };
    auto plain = [](const Vec& v) { return v; };

    Buffer bsrc = src_buffer(p, dt, l, src), bw(dt, w), bb(dt, bias), bdd = dst_buffer(p, dt, l, dd);
    const size_t n_src = bsrc.size(), n_w = bw.size(), n_dst = bdd.size();

    // For rank < 3 the entries past `rank` must be ignored: put junk there half of the time.
    const bool junk = p.rank < 3 && pick(rng, 0, 1) == 1;
    auto params = [&](deconv_mode mode) {
        deconv_params prm = make_params(p, dt, l, mode);
        if (junk) junk_unused_entries(prm);
        return prm;
    };
    SCOPED_TRACE(junk ? "junk in params entries past rank" : "params entries past rank are defaults");
    Handle train(params(DECONV_TRAINING));
    ASSERT_TRUE(train.ok()) << deconv_status_string(train.status()) << ": " << train.error();
    SCOPED_TRACE(train.impls());
    const std::string forward_impl = train.impl(DECONV_PASS_FORWARD);
    subpixel_forwards += forward_impl.rfind("subpixel:", 0) == 0;
    subpixel_on_amx |= forward_impl.rfind("subpixel:", 0) == 0 && forward_impl.find("amx") != std::string::npos;
    subpixel_weight_gradients += std::string(train.impl(DECONV_PASS_BACKWARD_WEIGHTS)).rfind("subpixel:", 0) == 0;
    depthwise_forwards += forward_impl.rfind("libdeconv_dw:", 0) == 0;
    depthwise_data_gradients += std::string(train.impl(DECONV_PASS_BACKWARD_DATA)).rfind("libdeconv_dw:", 0) == 0;
    depthwise_weight_gradients += std::string(train.impl(DECONV_PASS_BACKWARD_WEIGHTS)).rfind("libdeconv_dw:", 0) == 0;

    // Forward, on an inference handle half of the time. Requests in a random order, so that
    // the state left by one call cannot make the next look right.
    {
        const bool inference = pick(rng, 0, 1) == 1;
        Handle inf(params(DECONV_INFERENCE));
        ASSERT_TRUE(inf.ok()) << inf.error();
        deconv* h = inference ? inf.get() : train.get();
        SCOPED_TRACE(std::string("forward on ") + (inference ? "inference" : "training") +
                     " handle, impl " + (inference ? inf : train).impl(DECONV_PASS_FORWARD));
        const Expected e = expect_forward(p, src, w, bias);
        std::array<deconv_req, 3> reqs{DECONV_REQ_WRITE, DECONV_REQ_ADD, DECONV_REQ_NULL};
        std::shuffle(reqs.begin(), reqs.end(), rng);
        for (deconv_req r : reqs) {
            Out dst(dt, n_dst, r, pick(rng, 0, 1) == 1, rng);
            const deconv_status st = deconv_forward(h, bsrc.data(), bw.data(),
                                                    p.bias ? bb.data() : nullptr, dst.ptr(), r);
            ASSERT_EQ(st, DECONV_OK) << "forward req=" << req_str(r) << ": " << deconv_last_error();
            check_out("dst", dst, e, dt, dst_cf);
        }
    }

    // Backward: three calls; across them every output sees every request once, in combinations
    // that vary from problem to problem (e.g. weights null with bias written).
    const Expected ed = expect_backward_data(p, w, dd);
    const Expected ew = expect_backward_weights(p, src, dd);
    const Expected eb = p.bias ? expect_backward_bias(p, dd) : Expected{};
    const deconv_req R[3] = {DECONV_REQ_WRITE, DECONV_REQ_ADD, DECONV_REQ_NULL};
    const int a = static_cast<int>(pick(rng, 0, 2)), b = static_cast<int>(pick(rng, 0, 2));
    for (int call = 0; call < 3; ++call) {
        const deconv_req rs = R[call], rw = R[(call + a) % 3];
        const deconv_req rb = p.bias ? R[(call + b) % 3] : DECONV_REQ_NULL;
        Out ds(dt, n_src, rs, pick(rng, 0, 1) == 1, rng);
        Out dw(dt, n_w, rw, pick(rng, 0, 1) == 1, rng);
        Out db(dt, static_cast<size_t>(p.bias ? p.out_channels : 0), rb,
               !p.bias || pick(rng, 0, 1) == 1, rng);
        // Inputs no requested output needs may be NULL; pass NULL for them half of the time.
        const bool drop = pick(rng, 0, 1) == 1;
        const void* in_src = (rw == DECONV_REQ_NULL && drop) ? nullptr : bsrc.data();
        const void* in_w = (rs == DECONV_REQ_NULL && drop) ? nullptr : bw.data();
        const bool any = rs != DECONV_REQ_NULL || rw != DECONV_REQ_NULL || rb != DECONV_REQ_NULL;
        const void* in_dd = (!any && drop) ? nullptr : bdd.data();
        SCOPED_TRACE(std::string("backward req_src=") + req_str(rs) + " req_weights=" +
                     req_str(rw) + " req_bias=" + req_str(rb) +
                     (drop ? " (unneeded inputs NULL)" : ""));
        const deconv_status st = deconv_backward(train.get(), in_src, in_w, in_dd, ds.ptr(), rs,
                                                 dw.ptr(), rw, db.ptr(), rb);
        ASSERT_EQ(st, DECONV_OK) << deconv_last_error();
        check_out("diff_src", ds, ed, dt, src_cf);
        check_out("diff_weights", dw, ew, dt, plain);
        if (p.bias) check_out("diff_bias", db, eb, dt, plain);
    }
}

class Sweep : public ::testing::TestWithParam<int> {};

TEST_P(Sweep, AllPassesAllRequests) {
    const int subpixel_before = subpixel_forwards, gradients_before = subpixel_weight_gradients;
    const int depthwise_before = depthwise_forwards, data_gradients_before = depthwise_data_gradients;
    const int weight_gradients_before = depthwise_weight_gradients;
    for (int i = GetParam() * kPerShard; i < (GetParam() + 1) * kPerShard; ++i) {
        std::mt19937_64 rng(kSeed + i);
        const Problem p = random_problem(rng);
        const deconv_layout l = pick(rng, 0, 1) ? DECONV_CHANNELS_LAST : DECONV_CHANNELS_FIRST;
        run_case(i, p, DECONV_F32, l, rng);
        run_case(i, p, DECONV_BF16, l == DECONV_CHANNELS_LAST ? DECONV_CHANNELS_FIRST : DECONV_CHANNELS_LAST, rng);
        if (HasFatalFailure()) return;
    }
    // Pinned, it takes the problems without dilation that a real oneDNN convolution runs with
    // channels-last output (not those with few channels per group): 2-10 of 40 cases per shard.
    if (pinned_to("subpixel")) {
        EXPECT_GT(subpixel_forwards - subpixel_before, 0);
        if (subpixel_on_amx && !std::getenv("DECONV_DATA_LAYOUT")) {
            EXPECT_GT(subpixel_weight_gradients - gradients_before, 0);
        }
    }
    // Pinned, every depthwise problem's forward pass (a quarter of the cases) runs it where the
    // CPU has AVX-512 or AVX2 (on AVX2 not on channels-first planes), its data gradient (on
    // channels-first planes, channels-last data copied) and its weight gradient.
    if (pinned_to("depthwise") && (__builtin_cpu_supports("avx512bw") || __builtin_cpu_supports("avx2"))) {
        EXPECT_GT(depthwise_forwards - depthwise_before, 0);
        EXPECT_GT(depthwise_data_gradients - data_gradients_before, 0);
        EXPECT_GT(depthwise_weight_gradients - weight_gradients_before, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Shards, Sweep, ::testing::Range(0, kShards));

// 48 wide problems (seeds kWideSeed + i), 4 shards.

class SweepWide : public ::testing::TestWithParam<int> {};

TEST_P(SweepWide, AllPassesAllRequests) {
    for (int i = GetParam() * kWidePerShard; i < (GetParam() + 1) * kWidePerShard; ++i) {
        std::mt19937_64 rng(kWideSeed + i);
        const Problem p = random_problem(rng, /*wide=*/true);
        const deconv_layout l = pick(rng, 0, 1) ? DECONV_CHANNELS_LAST : DECONV_CHANNELS_FIRST;
        run_case(-1 - i, p, DECONV_F32, l, rng);
        run_case(-1 - i, p, DECONV_BF16, l == DECONV_CHANNELS_LAST ? DECONV_CHANNELS_FIRST : DECONV_CHANNELS_LAST,
                rng);
        if (HasFatalFailure()) return;
    }
}

INSTANTIATE_TEST_SUITE_P(Shards, SweepWide, ::testing::Range(0, kWideShards));

// Problems the library may compute as one matrix product (impl/gemm_formulation.hpp): groups 1,
// no pad, adj or dilation, and stride == kernel or in_size 1 in every dim. 48 problems, 6
// shards, both layouts; pinned to the matmul, each also checks that the matmul route is taken.
constexpr int kMatrixShards = 6, kMatrixPerShard = 8;

Problem random_matrix_product(std::mt19937_64& rng) {
    Problem p;
    p.rank = static_cast<int>(pick(rng, 1, 3));
    p.batch = pick(rng, 1, 5);
    p.in_channels = pick(rng, 1, 40);
    p.out_channels = pick(rng, 1, 20);
    const bool target = pick(rng, 0, 2) == 0;  // the full output as target_shape: pad 0, adj 0
    for (int d = 0; d < p.rank; ++d) {
        p.kernel[d] = pick(rng, 1, p.rank == 3 ? 3 : 4);
        const bool single = pick(rng, 0, 2) == 0;  // in_size 1, any stride
        p.in_size[d] = single ? 1 : pick(rng, 2, p.rank == 3 ? 3 : 5);
        p.stride[d] = single ? pick(rng, 1, 3) : p.kernel[d];
        if (target) p.target_shape[d] = p.stride[d] * (p.in_size[d] - 1) + p.kernel[d];
    }
    p.bias = pick(rng, 0, 1) == 1;
    return p;
}

class SweepMatrixProduct : public ::testing::TestWithParam<int> {};

TEST_P(SweepMatrixProduct, AllPassesAllRequests) {
    // Which formulation runs is measured; the cpp_sweep_formulation_* entries pin each.
    const bool pinned_to_matmul = pinned_to("matmul");
    for (int i = GetParam() * kMatrixPerShard; i < (GetParam() + 1) * kMatrixPerShard; ++i) {
        std::mt19937_64 rng(kMatrixSeed + i);
        const Problem p = random_matrix_product(rng);
        const deconv_layout l = pick(rng, 0, 1) ? DECONV_CHANNELS_LAST : DECONV_CHANNELS_FIRST;
        for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
            if (pinned_to_matmul) {
                Handle h(make_params(p, dt, l, DECONV_TRAINING));
                ASSERT_TRUE(h.ok()) << h.error();
                for (deconv_pass pass : {DECONV_PASS_FORWARD, DECONV_PASS_BACKWARD_DATA, DECONV_PASS_BACKWARD_WEIGHTS})
                    EXPECT_EQ(std::string(h.impl(pass)).rfind("matmul:", 0), 0u)
                            << describe(-1000 - i, p, dt, l) << " pass " << pass << ": " << h.impl(pass);
            }
            run_case(-1000 - i, p, dt, l, rng);
        }
        if (HasFatalFailure()) return;
    }
}

INSTANTIATE_TEST_SUITE_P(Shards, SweepMatrixProduct, ::testing::Range(0, kMatrixShards));

// The subpixel convolution is offered only where it does not mostly compute zeros
// (impl/subpixel_formulation.hpp): pinned to it (cpp_subpixel_candidates_subpixel), a stride of
// 4 over a kernel of 1 in 2D (16 times the kernel's taps) runs oneDNN's deconvolution instead, a
// stride of 2 over a kernel of 4 (as many taps) the subpixel convolution. Both match the
// reference in every pass, pinned or not.
TEST(SubpixelCandidates, OnlyWhereMostPhaseTapsAreTheKernels) {
    struct Case {
        int64_t kernel, stride;
        bool subpixel;
    };
    for (const Case& c : {Case{1, 4, false}, Case{4, 2, true}}) {
        Problem p;
        p.rank = 2;
        p.in_channels = p.out_channels = 16;
        p.in_size = {6, 5, 1};
        p.kernel = {c.kernel, c.kernel, 1};
        p.stride = {c.stride, c.stride, 1};
        if (pinned_to("subpixel")) {
            Handle h(make_params(p, DECONV_F32, DECONV_CHANNELS_LAST, DECONV_TRAINING));
            ASSERT_TRUE(h.ok()) << h.error();
            EXPECT_EQ(h.impl(DECONV_PASS_FORWARD).rfind("subpixel:", 0) == 0, c.subpixel)
                    << "kernel " << c.kernel << ", stride " << c.stride << ": " << h.impl(DECONV_PASS_FORWARD);
        }
        std::mt19937_64 rng(c.kernel);
        run_case(-2000 - int(c.kernel), p, DECONV_F32, DECONV_CHANNELS_LAST, rng);
    }
}

// Stride 1 is a single phase (impl/subpixel_formulation.hpp, is_single_phase): dilation allowed,
// the output written and added into in the caller's buffer with the bias in the convolution.
// Pinned (cpp_subpixel_candidates_subpixel) it runs so. In the last two cases some outputs read
// only padding (in < dilate), in the very last all of them: oneDNN's brgconv then drops a sum. All match the reference in
// every pass and request, pinned or not, in both layouts and data types.
TEST(SubpixelCandidates, SinglePhaseWritesTheCallersBuffer) {
    struct Case {
        int64_t in, kernel, dilate, pad;
    };
    for (const Case& c : {Case{9, 3, 1, 1}, Case{12, 3, 2, 2}, Case{11, 4, 3, 0}, Case{3, 3, 4, 3}, Case{1, 2, 2, 1}}) {
        Problem p;
        p.rank = 2;
        p.batch = 2;
        p.in_channels = 24;
        p.out_channels = 20;
        p.in_size = {c.in, c.in + 1, 1};
        p.kernel = {c.kernel, c.kernel - 1, 1};
        p.dilate = {c.dilate, 1, 1};
        p.pad = {c.pad, 0, 0};
        std::mt19937_64 rng(c.in * 100 + c.dilate);
        for (deconv_layout layout : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST}) {
            if (pinned_to("subpixel") && layout == DECONV_CHANNELS_LAST) {
                Handle h(make_params(p, DECONV_F32, layout, DECONV_INFERENCE));
                ASSERT_TRUE(h.ok()) << h.error();
                const std::string impl = h.impl(DECONV_PASS_FORWARD);
                EXPECT_NE(impl.find("(one phase)"), std::string::npos) << "dilate " << c.dilate << ": " << impl;
            }
            for (deconv_dtype dt : {DECONV_F32, DECONV_BF16})
                run_case(-3000 - int(c.in), p, dt, layout, rng);
            if (HasFatalFailure()) return;
        }
    }
}

// The generator really covers what the sweep claims (guards against a silent narrowing).
TEST(SweepCoverage, GeneratorCoversTheSpace) {
    int ranks[4] = {}, depthwise = 0, grouped = 0, target = 0, dilated = 0, adj = 0, bias = 0,
        strided = 0, padded = 0;
    for (int i = 0; i < kShards * kPerShard; ++i) {
        std::mt19937_64 rng(kSeed + i);
        const Problem p = random_problem(rng);
        ++ranks[p.rank];
        depthwise += p.groups > 1 && p.groups == p.in_channels && p.groups == p.out_channels;
        grouped += p.groups > 1 && !(p.groups == p.in_channels && p.groups == p.out_channels);
        bool t = false, dl = false, a = false, s = false, pd = false;
        for (int d = 0; d < p.rank; ++d) {
            t |= p.target_shape[d] != 0;
            dl |= p.dilate[d] > 1;
            a |= p.adj[d] > 0 && p.target_shape[d] == 0;
            s |= p.stride[d] > 1;
            pd |= p.pad[d] > 0 && p.target_shape[d] == 0;
        }
        target += t, dilated += dl, adj += a, strided += s, padded += pd, bias += p.bias;
    }
    for (int r = 1; r <= 3; ++r) EXPECT_GE(ranks[r], 50) << "rank " << r;
    EXPECT_GE(depthwise, 30);
    EXPECT_GE(grouped, 30);
    EXPECT_GE(target, 30);
    EXPECT_GE(dilated, 30);
    EXPECT_GE(adj, 30);
    EXPECT_GE(strided, 30);
    EXPECT_GE(padded, 30);
    EXPECT_GE(bias, 100);
}

}  // namespace
