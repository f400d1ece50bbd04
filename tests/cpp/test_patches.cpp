// The patches formulation (impl/gemm_formulation.hpp, impl/patch_gather.cpp): a matmul's patch
// matrix gathered into the output, on shapes that take each of the gather's paths: channels in
// blocks of 128 and a partial one, rows in blocks of 8 pixels and a partial one, 1D, 2D and 3D,
// dilation, padding that cuts taps off at both edges, adj, asymmetric kernels and strides, and
// a target shape; f32 and bf16, both layouts, written and added, with and without a bias. Pinned
// to the formulation (DECONV_FORMULATION=patches, tests/cpp/CMakeLists.txt) every case must run
// on it; unpinned, on whatever route timing picks.
#include <deconv.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "harness.hpp"
#include "naive_deconv.hpp"

namespace {

using harness::Buffer;
using harness::Handle;
using harness::Vec;

struct PatchesCase {
    const char *name;
    int rank;
    int64_t in_channels, out_channels;
    std::array<int64_t, 3> in, kernel, stride, pad, dilate, adj, target;
};

// Taps over stride at most 4 in every case: the formulation's limit.
const PatchesCase kCases[] = {
        {"blocks_k4s2_c130_w20", 2, 5, 130, {10, 10, 1}, {4, 4, 1}, {2, 2, 1}, {1, 1, 0}, {1, 1, 1}, {0, 0, 0}, {}},
        {"1d_k8s4_pad3_adj2", 1, 4, 9, {21, 1, 1}, {8, 1, 1}, {4, 1, 1}, {3, 0, 0}, {1, 1, 1}, {2, 0, 0}, {}},
        {"cut_k5s3_pad4_adj2", 2, 6, 17, {7, 6, 1}, {5, 5, 1}, {3, 3, 1}, {4, 4, 0}, {1, 1, 1}, {2, 2, 0}, {}},
        {"asym_k3x5_s2x3", 2, 8, 24, {9, 11, 1}, {3, 5, 1}, {2, 3, 1}, {1, 2, 0}, {1, 1, 1}, {1, 0, 0}, {}},
        {"dilated_3d_k2d2s2", 3, 3, 7, {3, 4, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {2, 2, 2}, {1, 1, 1}, {}},
        {"target_k4s2_11x12", 2, 3, 10, {5, 5, 1}, {4, 4, 1}, {2, 2, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {11, 12, 0}},
};

void PrintTo(const PatchesCase &c, std::ostream *os) { *os << c.name; }

naive::Problem problem_of(const PatchesCase &c, bool bias) {
    naive::Problem p;
    p.rank = c.rank;
    p.batch = 3;
    p.in_channels = c.in_channels;
    p.out_channels = c.out_channels;
    p.in_size = c.in;
    p.kernel = c.kernel;
    p.stride = c.stride;
    p.pad = c.pad;
    p.dilate = c.dilate;
    p.adj = c.adj;
    p.target_shape = c.target;
    p.bias = bias;
    return p;
}

bool pinned_to_patches() {
    const char *pinned = std::getenv("DECONV_FORMULATION");
    return pinned && std::string(pinned) == "patches";
}

class Patches : public ::testing::TestWithParam<PatchesCase> {};

TEST_P(Patches, ForwardMatchesTheReference) {
    std::mt19937_64 rng(20261207);
    for (bool bias : {true, false})
        for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
            const naive::Problem p = problem_of(GetParam(), bias);
            const Vec src = harness::random_values(rng, naive::src_elems(p), dt);
            const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
            const Vec b = bias ? harness::random_values(rng, p.out_channels, dt) : Vec{};
            const Vec prior = harness::random_values(rng, naive::dst_elems(p), dt);
            const harness::Expected e = harness::expect_forward(p, src, w, b);
            for (deconv_layout l : {DECONV_CHANNELS_LAST, DECONV_CHANNELS_FIRST}) {
                SCOPED_TRACE(std::string(harness::dtype_str(dt)) + " " + harness::layout_str(l)
                        + (bias ? " bias" : " no bias"));
                Handle h(p, dt, l, DECONV_INFERENCE);
                ASSERT_TRUE(h.ok()) << h.error();
                SCOPED_TRACE(h.impl(DECONV_PASS_FORWARD));
                if (pinned_to_patches()) {
                    EXPECT_EQ(h.impl(DECONV_PASS_FORWARD).rfind("patches:", 0), 0u);
                }
                Buffer bs = harness::src_buffer(p, dt, l, src), bw(dt, w), bb(dt, b);
                for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
                    SCOPED_TRACE(harness::req_str(r));
                    Buffer dst = harness::dst_buffer(p, dt, l, prior);
                    ASSERT_EQ(deconv_forward(h.get(), bs.data(), bw.data(), bias ? bb.data() : nullptr, dst.data(), r),
                            DECONV_OK)
                            << deconv_last_error();
                    EXPECT_TRUE(dst.guards_intact());
                    EXPECT_TRUE(harness::compare("dst", harness::read_dst(p, l, dst), e, dt,
                            r == DECONV_REQ_ADD ? &prior : nullptr));
                }
            }
        }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Patches, ::testing::ValuesIn(kCases),
        [](const ::testing::TestParamInfo<PatchesCase> &info) { return std::string(info.param.name); });

} // namespace
