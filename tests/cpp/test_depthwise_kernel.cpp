// The library's own depthwise kernels on the shapes that take each of their paths. Forward
// (impl/depthwise_forward.cpp): channel vectors in pairs (at most 8 taps a column, 6 on AVX2),
// single and partial vectors, more taps than registers hold (16, 12 on AVX2: weights read from
// memory, columns in blocks of 8, 6 on AVX2, then one at a time) and more than one column's arrays
// hold (tap by tap); the random sweeps have at most 27 taps a column. Weight gradient
// (impl/depthwise_backward_weights.cpp): 1 to 8 channel vectors at once, more kernel columns than
// one piece takes (16 on AVX-512, 8 on AVX2), edge columns on both sides. Data gradient of
// channels-first data (impl/depthwise_backward_data.cpp): strides 1, 2 and wider (each sorts a row
// into its phases another way), rows of results in pieces of 64 and 1 to 7 vectors (AVX2) with a
// partial last one, taps before and after a result's own column (zeros around the phases),
// dilation, adj; the weight gradient of channels-first planes (impl/depthwise_plane_weights.cpp) on
// the same shapes, 1 to 24 kernel columns (8 at a time on AVX-512, 6 on AVX2, then the rest), with
// DECONV_DATA_LAYOUT=channels_first, which also puts the data gradient of channels-last data on
// channels-first copies; with channels_last that runs on the rows kernel
// (impl/depthwise_backward_data_rows.cpp: the forward's column kernels, edge columns with the taps
// inside, 1 to 81 taps), channels-first data copied. Pinned to the kernels
// (DECONV_FORMULATION=depthwise, tests/cpp/CMakeLists.txt) each case must run on them where the CPU
// has their instructions; unpinned, on whatever route timing picks.
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

struct DepthwiseCase {
    const char *name;
    int rank;
    int64_t channels, in, kernel, stride, pad, dilate, adj = 0;
};

// Taps per output column in the interior: (kernel / stride)^rank where the stride divides the
// kernel.
const DepthwiseCase kCases[] = {
        {"pairs_k2s1_c40", 2, 40, 5, 2, 1, 0, 1},         // 4 taps: a pair of vectors, a partial one
        {"single_k3s1_c40", 2, 40, 5, 3, 1, 1, 1},        // 9 taps: single vectors and a partial one
        {"memory_1d_k24_c33", 1, 33, 30, 24, 1, 3, 1},    // 24 taps: weights from memory
        {"memory_k5s1_c48", 2, 48, 6, 5, 1, 2, 1},        // 25 taps
        {"memory_blocks_k5s1_c20", 2, 20, 19, 5, 1, 2, 1}, // 25 taps, 15 interior columns: blocks of 8 or 6, then single ones
        {"tap_by_tap_k9s1_c20", 2, 20, 10, 9, 1, 4, 1},   // 81 taps
        {"dilated_k3d2s2_c32", 2, 32, 6, 3, 2, 2, 2},     // phases without interior taps
        {"strided_3d_k2s2_c16", 3, 16, 3, 2, 2, 0, 1},    // one tap a column
        {"wide_k3s2_c130", 2, 130, 4, 3, 2, 1, 1},        // 8 vectors at once, then a partial one
        {"long_rows_1d_k4s2_c3", 1, 3, 150, 4, 2, 1, 1},  // data gradient: 2 x 64 results a row, then 22
        {"rows_of_64_1d_k3s1_c2", 1, 2, 64, 3, 1, 1, 1},  // exactly one piece of 64
        {"rows_of_127_1d_k3s1_c3", 1, 3, 127, 3, 1, 1, 1}, // 64, then as many vectors as a piece, the last partial
        {"stride3_k5s3_adj2_c17", 2, 17, 7, 5, 3, 2, 1, 2}, // phases value by value; adj
        {"pad_beyond_k3s2_c5", 2, 5, 9, 3, 2, 2, 1, 1},   // taps a phase column before the result's
        {"unpadded_k4s4_c6", 2, 6, 5, 4, 4, 0, 1},        // every tap at or after it
        {"long_rows_1d_k8s4_c3", 1, 3, 42, 8, 4, 2, 1},   // stride 4: 2 x 64 outputs interleaved, then 40
        {"dilated_3d_k2d3s2_c3", 3, 3, 4, 2, 2, 1, 3, 1}, // depth and height taps outside the output
        {"wide_1d_k9s1_c70", 1, 70, 12, 9, 1, 4, 1},      // weight gradient on AVX2: 8 columns, then 1 on 8 vectors
        {"stride3_1d_k3s3_c5", 1, 5, 20, 3, 3, 0, 1},     // forward planes, stride 3: 20 columns a phase (2 vectors)
};

void PrintTo(const DepthwiseCase &c, std::ostream *os) { *os << c.name; }

naive::Problem problem_of(const DepthwiseCase &c) {
    naive::Problem p;
    p.rank = c.rank;
    p.batch = 2;
    p.groups = p.in_channels = p.out_channels = c.channels;
    for (int d = 0; d < c.rank; ++d) {
        p.in_size[d] = c.in;
        p.kernel[d] = c.kernel;
        p.stride[d] = c.stride;
        p.pad[d] = c.pad;
        p.dilate[d] = c.dilate;
        p.adj[d] = c.adj;
    }
    p.bias = true;
    return p;
}

// Pinned to the kernels and to a data layout, whether the forward and weight-gradient kernels on
// channels-first planes run (rather than those on channels-last copies): with
// DECONV_DATA_LAYOUT=channels_first on channels-first data (the data gradient on either data).
// Without a layout pinned timing chooses.
bool layout_pinned(const char *layout) {
    const char *pinned = std::getenv("DECONV_DATA_LAYOUT");
    return pinned && std::string(pinned) == layout;
}
bool on_planes(deconv_layout l) { return layout_pinned("channels_first") && l == DECONV_CHANNELS_FIRST; }

// Pinned to the kernels (DECONV_FORMULATION=depthwise), whether each pass must run on them:
// every kernel with AVX-512; with AVX2 all but the forward pass on channels-first planes.
bool pinned_to_the_kernels() {
    const char *pinned = std::getenv("DECONV_FORMULATION");
    return pinned && std::string(pinned) == "depthwise";
}
bool with_avx512() { return __builtin_cpu_supports("avx512bw"); }
bool with_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool forward_on_the_kernel(deconv_layout l) {
    return pinned_to_the_kernels() && (with_avx512() || (with_avx2() && !on_planes(l)));
}
bool data_gradient_on_the_kernel() { return pinned_to_the_kernels() && (with_avx512() || with_avx2()); }
bool weight_gradient_on_the_kernel() { return pinned_to_the_kernels() && (with_avx512() || with_avx2()); }

class DepthwiseKernel : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(DepthwiseKernel, ForwardMatchesTheReference) {
    const naive::Problem p = problem_of(GetParam());
    std::mt19937_64 rng(20261205);
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        const Vec src = harness::random_values(rng, naive::src_elems(p), dt);
        const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
        const Vec bias = harness::random_values(rng, p.out_channels, dt);
        const Vec prior = harness::random_values(rng, naive::dst_elems(p), dt);
        const harness::Expected e = harness::expect_forward(p, src, w, bias);
        for (deconv_layout l : {DECONV_CHANNELS_LAST, DECONV_CHANNELS_FIRST}) {
            SCOPED_TRACE(std::string(harness::dtype_str(dt)) + " " + harness::layout_str(l));
            Handle h(p, dt, l, DECONV_INFERENCE);
            ASSERT_TRUE(h.ok()) << h.error();
            SCOPED_TRACE(h.impl(DECONV_PASS_FORWARD));
            if (forward_on_the_kernel(l)) {
                EXPECT_EQ(h.impl(DECONV_PASS_FORWARD).rfind("libdeconv_dw:", 0), 0u);
                if (std::getenv("DECONV_DATA_LAYOUT")) {
                    EXPECT_EQ(h.impl(DECONV_PASS_FORWARD).find("on channels-first planes") != std::string::npos,
                            on_planes(l));
                }
            }
            Buffer bs = harness::src_buffer(p, dt, l, src), bw(dt, w), bb(dt, bias);
            for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
                SCOPED_TRACE(harness::req_str(r));
                Buffer dst = harness::dst_buffer(p, dt, l, prior);
                ASSERT_EQ(deconv_forward(h.get(), bs.data(), bw.data(), bb.data(), dst.data(), r), DECONV_OK)
                        << deconv_last_error();
                EXPECT_TRUE(dst.guards_intact());
                EXPECT_TRUE(harness::compare("dst", harness::read_dst(p, l, dst), e, dt,
                        r == DECONV_REQ_ADD ? &prior : nullptr));
            }
        }
    }
}

// The data gradient, written and added; channels-first data on the kernel when pinned to it
// (channels-last data in channels-first copies).
TEST_P(DepthwiseKernel, DataGradientMatchesTheReference) {
    const naive::Problem p = problem_of(GetParam());
    std::mt19937_64 rng(20261207);
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
        const Vec dd = harness::random_values(rng, naive::dst_elems(p), dt);
        const Vec prior = harness::random_values(rng, naive::src_elems(p), dt);
        const harness::Expected e = harness::expect_backward_data(p, w, dd);
        for (deconv_layout l : {DECONV_CHANNELS_LAST, DECONV_CHANNELS_FIRST}) {
            SCOPED_TRACE(std::string(harness::dtype_str(dt)) + " " + harness::layout_str(l));
            Handle h(p, dt, l, DECONV_TRAINING);
            ASSERT_TRUE(h.ok()) << h.error();
            SCOPED_TRACE(h.impl(DECONV_PASS_BACKWARD_DATA));
            // The rows kernel takes up to 64 taps a result.
            int64_t taps = 1;
            for (int d = 0; d < p.rank; ++d) taps *= p.kernel[d];
            if (data_gradient_on_the_kernel() && !(layout_pinned("channels_last") && taps > 64)) {
                EXPECT_EQ(h.impl(DECONV_PASS_BACKWARD_DATA).rfind("libdeconv_dw:", 0), 0u);
                if (std::getenv("DECONV_DATA_LAYOUT")) {
                    EXPECT_EQ(h.impl(DECONV_PASS_BACKWARD_DATA).find("on channels-first planes") != std::string::npos,
                            layout_pinned("channels_first"));
                }
            }
            Buffer bw(dt, w), bdd = harness::dst_buffer(p, dt, l, dd);
            for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
                SCOPED_TRACE(harness::req_str(r));
                Buffer ds = harness::src_buffer(p, dt, l, prior);
                ASSERT_EQ(deconv_backward(h.get(), nullptr, bw.data(), bdd.data(), ds.data(), r, nullptr, DECONV_REQ_NULL,
                                  nullptr, DECONV_REQ_NULL),
                        DECONV_OK)
                        << deconv_last_error();
                EXPECT_TRUE(ds.guards_intact());
                EXPECT_TRUE(harness::compare("diff_src", harness::read_src(p, l, ds), e, dt,
                        r == DECONV_REQ_ADD ? &prior : nullptr));
            }
        }
    }
}

// The weight gradient with the bias gradient, which the kernel takes on the way (requests
// crossed, so that each output's own request counts), and the bias gradient alone (reduced
// apart).
TEST_P(DepthwiseKernel, WeightGradientMatchesTheReference) {
    const naive::Problem p = problem_of(GetParam());
    std::mt19937_64 rng(20261206);
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        const Vec src = harness::random_values(rng, naive::src_elems(p), dt);
        const Vec dd = harness::random_values(rng, naive::dst_elems(p), dt);
        const Vec prior_w = harness::random_values(rng, naive::weights_elems(p), dt);
        const Vec prior_b = harness::random_values(rng, p.out_channels, dt);
        const harness::Expected ew = harness::expect_backward_weights(p, src, dd);
        const harness::Expected eb = harness::expect_backward_bias(p, dd);
        for (deconv_layout l : {DECONV_CHANNELS_LAST, DECONV_CHANNELS_FIRST}) {
            SCOPED_TRACE(std::string(harness::dtype_str(dt)) + " " + harness::layout_str(l));
            Handle h(p, dt, l, DECONV_TRAINING);
            ASSERT_TRUE(h.ok()) << h.error();
            SCOPED_TRACE(h.impl(DECONV_PASS_BACKWARD_WEIGHTS));
            if (weight_gradient_on_the_kernel()) {
                EXPECT_EQ(h.impl(DECONV_PASS_BACKWARD_WEIGHTS).rfind("libdeconv_dw:", 0), 0u);
                if (std::getenv("DECONV_DATA_LAYOUT")) {
                    EXPECT_EQ(h.impl(DECONV_PASS_BACKWARD_WEIGHTS).find("on channels-first planes") != std::string::npos,
                            on_planes(l));
                }
            }
            Buffer bs = harness::src_buffer(p, dt, l, src), bdd = harness::dst_buffer(p, dt, l, dd);
            const deconv_req requests[][2] = {{DECONV_REQ_WRITE, DECONV_REQ_ADD}, {DECONV_REQ_ADD, DECONV_REQ_WRITE},
                    {DECONV_REQ_ADD, DECONV_REQ_NULL}, {DECONV_REQ_NULL, DECONV_REQ_ADD}};
            for (const auto &r : requests) {
                SCOPED_TRACE(std::string("weights ") + harness::req_str(r[0]) + ", bias " + harness::req_str(r[1]));
                Buffer dw(dt, prior_w), db(dt, prior_b);
                ASSERT_EQ(deconv_backward(h.get(), bs.data(), nullptr, bdd.data(), nullptr, DECONV_REQ_NULL, dw.data(),
                                  r[0], db.data(), r[1]),
                        DECONV_OK)
                        << deconv_last_error();
                EXPECT_TRUE(dw.guards_intact() && db.guards_intact());
                if (r[0] == DECONV_REQ_NULL) EXPECT_EQ(dw.get(), prior_w);
                else EXPECT_TRUE(harness::compare("diff_weights", dw.get(), ew, dt, r[0] == DECONV_REQ_ADD ? &prior_w : nullptr));
                if (r[1] == DECONV_REQ_NULL) EXPECT_EQ(db.get(), prior_b);
                else EXPECT_TRUE(harness::compare("diff_bias", db.get(), eb, dt, r[1] == DECONV_REQ_ADD ? &prior_b : nullptr));
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseKernel, ::testing::ValuesIn(kCases),
        [](const ::testing::TestParamInfo<DepthwiseCase> &info) { return std::string(info.param.name); });

} // namespace
