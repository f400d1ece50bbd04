// Calls from inside the caller's own OpenMP parallel region (a program that runs one handle per
// thread of its team). Small problems, which the library runs on the calling thread alone, work
// there: every pass of every thread against the naive reference (the library shares out its
// loops with `#pragma omp for`, which outside a region of its own would bind to the caller's
// team, each thread doing only its share). Larger problems are refused with
// DECONV_UNSUPPORTED, outputs untouched: oneDNN 2.6 runs their kernels on one thread there,
// whatever count they were built for, and computed half a weight gradient or hung.
#include <gtest/gtest.h>
#include <omp.h>

#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

namespace {

using namespace harness;

constexpr int kTeam = 4;

struct Case {
    const char *name;
    Problem problem;
    deconv_dtype dtype;
    deconv_layout layout;
};

Problem make(int64_t batch, int64_t ic, int64_t oc, int64_t in, int64_t k, int64_t s, int64_t pad) {
    Problem p;
    p.rank = 2;
    p.batch = batch;
    p.in_channels = ic;
    p.out_channels = oc;
    p.in_size = {in, in + 1, 1};
    p.kernel = {k, k, 1};
    p.stride = {s, s, 1};
    p.pad = {pad, pad, 0};
    return p;
}

// What one thread of the team computed, from inputs of its own.
struct Outcome {
    Vec src, weights, bias, diff_dst;
    Vec dst, diff_src, diff_weights, diff_bias;
    std::string error;
};

std::string run_all_passes(const Case &c, deconv *h, Outcome &o) {
    const Problem &p = c.problem;
    Buffer src = src_buffer(p, c.dtype, c.layout, o.src), w(c.dtype, o.weights), b(c.dtype, o.bias);
    Buffer dd = dst_buffer(p, c.dtype, c.layout, o.diff_dst);
    Buffer dst(c.dtype, dd.size()), ds(c.dtype, src.size()), dw(c.dtype, w.size()), db(c.dtype, b.size());
    if (deconv_forward(h, src.data(), w.data(), b.data(), dst.data(), DECONV_REQ_WRITE) != DECONV_OK)
        return std::string("forward: ") + deconv_last_error();
    if (deconv_backward(h, src.data(), w.data(), dd.data(), ds.data(), DECONV_REQ_WRITE, dw.data(),
                        DECONV_REQ_WRITE, db.data(), DECONV_REQ_WRITE) != DECONV_OK)
        return std::string("backward: ") + deconv_last_error();
    o.dst = read_dst(p, c.layout, dst);
    o.diff_src = read_src(p, c.layout, ds);
    o.diff_weights = dw.get();
    o.diff_bias = db.get();
    return "";
}

class OpenMPCaller : public ::testing::TestWithParam<Case> {};

TEST_P(OpenMPCaller, SmallProblemsComputeInEveryThreadOfTheTeam) {
    const Case &c = GetParam();
    const Problem &p = c.problem;
    Handle h(p, c.dtype, c.layout, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();

    std::vector<Outcome> outcomes(kTeam);
    for (int t = 0; t < kTeam; t++) {
        std::mt19937_64 rng(1000 + t);
        Outcome &o = outcomes[size_t(t)];
        o.src = random_values(rng, size_t(naive::src_elems(p)), c.dtype);
        o.weights = random_values(rng, size_t(naive::weights_elems(p)), c.dtype);
        o.bias = random_values(rng, size_t(p.out_channels), c.dtype);
        o.diff_dst = random_values(rng, size_t(naive::dst_elems(p)), c.dtype);
    }
    int team = 0;
#pragma omp parallel num_threads(kTeam)
    {
#pragma omp single
        team = omp_get_num_threads();
        const int t = omp_get_thread_num();
        outcomes[size_t(t)].error = run_all_passes(c, h.get(), outcomes[size_t(t)]);
    }
    ASSERT_EQ(team, kTeam) << "the test needs a team of " << kTeam << " threads";

    for (int t = 0; t < kTeam; t++) {
        const Outcome &o = outcomes[size_t(t)];
        SCOPED_TRACE("thread " + std::to_string(t) + ", " + h.impls());
        ASSERT_EQ(o.error, "");
        EXPECT_TRUE(compare("dst", o.dst, expect_forward(p, o.src, o.weights, o.bias), c.dtype));
        EXPECT_TRUE(compare("diff_src", o.diff_src, expect_backward_data(p, o.weights, o.diff_dst), c.dtype));
        EXPECT_TRUE(compare("diff_weights", o.diff_weights, expect_backward_weights(p, o.src, o.diff_dst), c.dtype));
        EXPECT_TRUE(compare("diff_bias", o.diff_bias, expect_backward_bias(p, o.diff_dst), c.dtype));
    }
}

// Small problems: a few thousand elements and FLOPs, run on the calling thread alone.
INSTANTIATE_TEST_SUITE_P(
    Small, OpenMPCaller,
    ::testing::Values(Case{"f32_channels_first", make(2, 8, 8, 5, 3, 2, 1), DECONV_F32, DECONV_CHANNELS_FIRST},
                      Case{"f32_channels_last", make(2, 8, 8, 5, 3, 2, 1), DECONV_F32, DECONV_CHANNELS_LAST},
                      Case{"bf16_channels_first", make(2, 8, 8, 5, 3, 2, 1), DECONV_BF16, DECONV_CHANNELS_FIRST}),
    [](const ::testing::TestParamInfo<Case> &info) { return std::string(info.param.name); });

// A problem the library runs on all threads: every call inside the caller's region is refused,
// naming the region, and leaves its outputs as they were; creating a handle there too.
TEST(OpenMPCallerLarger, CallsInsideTheCallersRegionAreRefusedOutputsUntouched) {
    const Problem p = make(4, 32, 48, 14, 4, 2, 1);
    Handle train(p, DECONV_F32, DECONV_CHANNELS_FIRST, DECONV_TRAINING);
    Handle infer(p, DECONV_F32, DECONV_CHANNELS_FIRST, DECONV_INFERENCE);
    ASSERT_TRUE(train.ok() && infer.ok()) << train.error() << infer.error();
    std::mt19937_64 rng(7);
    Buffer src(DECONV_F32, random_values(rng, size_t(naive::src_elems(p)), DECONV_F32));
    Buffer w(DECONV_F32, random_values(rng, size_t(naive::weights_elems(p)), DECONV_F32));
    Buffer b(DECONV_F32, random_values(rng, size_t(p.out_channels), DECONV_F32));
    Buffer dd(DECONV_F32, random_values(rng, size_t(naive::dst_elems(p)), DECONV_F32));
    std::vector<std::string> messages(kTeam * 5);
    std::vector<int> statuses(kTeam * 5, -1);
    std::vector<Buffer> outputs;
    for (int t = 0; t < kTeam; t++) {
        outputs.emplace_back(DECONV_F32, dd.size());
        outputs.emplace_back(DECONV_F32, src.size());
        outputs.emplace_back(DECONV_F32, w.size());
        outputs.emplace_back(DECONV_F32, b.size());
    }
    for (Buffer &o : outputs) o.fill_sentinel();
    const deconv_params prm = make_params(p);
#pragma omp parallel num_threads(kTeam)
    {
        const int t = omp_get_thread_num();
        Buffer *out = &outputs[size_t(4 * t)];
        auto record = [&](int k, deconv_status s) {
            statuses[size_t(5 * t + k)] = s;
            messages[size_t(5 * t + k)] = s == DECONV_OK ? "" : deconv_last_error();
        };
        record(0, deconv_forward(train.get(), src.data(), w.data(), b.data(), out[0].data(), DECONV_REQ_WRITE));
        record(1, deconv_backward(train.get(), src.data(), w.data(), dd.data(), out[1].data(), DECONV_REQ_ADD,
                                  out[2].data(), DECONV_REQ_WRITE, out[3].data(), DECONV_REQ_WRITE));
        record(2, deconv_set_weights(infer.get(), w.data(), b.data()));
        record(3, deconv_forward(infer.get(), src.data(), w.data(), b.data(), out[0].data(), DECONV_REQ_ADD));
        deconv *created = nullptr;
        record(4, deconv_create(&prm, &created));
        deconv_destroy(created);
    }
    const char *calls[] = {"deconv_forward", "deconv_backward", "deconv_set_weights", "deconv_forward",
                           "deconv_create"};
    for (size_t i = 0; i < statuses.size(); i++) {
        EXPECT_EQ(statuses[i], DECONV_UNSUPPORTED) << "thread " << i / 5 << ", " << calls[i % 5];
        EXPECT_NE(messages[i].find(calls[i % 5]), std::string::npos) << messages[i];
        EXPECT_NE(messages[i].find("parallel region"), std::string::npos) << messages[i];
    }
    for (size_t i = 0; i < outputs.size(); i++) EXPECT_TRUE(outputs[i].is_sentinel()) << "output " << i;
    // Outside the region the same handle computes.
    EXPECT_EQ(deconv_forward(train.get(), src.data(), w.data(), b.data(), outputs[0].data(), DECONV_REQ_WRITE),
              DECONV_OK)
        << deconv_last_error();
    EXPECT_TRUE(compare("dst", outputs[0].get(), expect_forward(p, src.get(), w.get(), b.get()), DECONV_F32));
}

}  // namespace
