// Commits of 4 MiB and more are written with non-temporal stores (impl/commit_kernels.hpp:
// kStreamBytes): outputs into the caller's buffer, whole cache lines streamed and the partial
// lines at the ends of rows written plainly, and inputs into the kernel's layout. These forwards
// (and backward data, whose diff_dst is as large) are large enough for that, on caller buffers
// that start on a cache line, one element past it and 16 bytes past it, with planes that are a
// whole number of lines (128x128) and planes that are not (129x129: no streaming there). Each
// result is checked against the naive reference, over a buffer pre-filled with NaN patterns so
// that an element left unwritten fails, and with guard bytes on both sides.
#include <deconv.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <random>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "naive_deconv.hpp"

namespace {

using harness::Vec;

// dtype, layout, then (bias, adj (0: 128x128 planes, 1: 129x129), offset in elements (-1: 16
// bytes)): a few combinations, each large problem takes a while against the reference.
using Variant = std::tuple<bool, int, int>;
using Case = std::tuple<deconv_dtype, deconv_layout, Variant>;

class StreamedOutputs : public ::testing::TestWithParam<Case> {};

// At least 4 MiB of output in either type: 2 (f32) or 4 (bf16) images of 32 channels,
// 128x128 (adj 0) or 129x129 (adj 1).
naive::Problem streamed_problem(deconv_dtype dt, bool bias, int adj) {
    naive::Problem p;
    p.batch = dt == DECONV_BF16 ? 4 : 2;
    p.in_channels = 8;
    p.out_channels = 32;
    p.in_size = {64, 64, 1};
    p.kernel = {4, 4, 1};
    p.stride = {2, 2, 1};
    p.pad = {1, 1, 0};
    p.adj = {adj, adj, 0};
    p.bias = bias;
    return p;
}

int offset_bytes(deconv_dtype dt, int offset_elements) {
    return offset_elements < 0 ? 16 : offset_elements * (dt == DECONV_BF16 ? 2 : 4);
}

TEST_P(StreamedOutputs, ForwardMatchesReference) {
    const auto [dt, layout, variant] = GetParam();
    const auto [bias, adj, offset_elements] = variant;
    const naive::Problem p = streamed_problem(dt, bias, adj);
    const size_t element = dt == DECONV_BF16 ? 2 : 4;

    std::mt19937_64 rng(20261203);
    const Vec src = harness::random_values(rng, naive::src_elems(p), dt);
    const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
    const Vec b = bias ? harness::random_values(rng, p.out_channels, dt) : Vec{};
    const auto out = naive::output_size(p);
    ASSERT_GE(naive::dst_elems(p) * int64_t(element), int64_t(4) << 20);

    harness::Handle h(p, dt, layout, DECONV_INFERENCE);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());
    harness::Buffer bs = harness::src_buffer(p, dt, layout, src), bw(dt, w), bb(dt, b);
    harness::Buffer dst(dt, static_cast<size_t>(naive::dst_elems(p)), offset_bytes(dt, offset_elements));
    dst.fill_sentinel();
    ASSERT_EQ(deconv_forward(h.get(), bs.data(), bw.data(), bias ? bb.data() : nullptr, dst.data(),
                      DECONV_REQ_WRITE),
            DECONV_OK)
            << deconv_last_error();
    EXPECT_TRUE(dst.guards_intact()) << "wrote outside dst";
    const Vec got = harness::from_layout(p, layout, dst.get(), p.out_channels, out);
    EXPECT_TRUE(harness::compare("dst", got, harness::expect_forward(p, src, w, b, false), dt));
}

// Backward data: diff_dst as large, its copy into the kernel's layout streamed too. A test of its
// own, so that the entry pinned to the subpixel formulation (forward only) can leave it out.
TEST_P(StreamedOutputs, BackwardDataMatchesReference) {
    const auto [dt, layout, variant] = GetParam();
    const auto [bias, adj, offset_elements] = variant;
    const naive::Problem p = streamed_problem(dt, bias, adj);

    std::mt19937_64 rng(20261204);
    const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
    const Vec dd = harness::random_values(rng, naive::dst_elems(p), dt);
    harness::Handle train(p, dt, layout, DECONV_TRAINING);
    ASSERT_TRUE(train.ok()) << train.error();
    SCOPED_TRACE(train.impls());
    harness::Buffer bw(dt, w), bdd = harness::dst_buffer(p, dt, layout, dd);
    harness::Buffer diff_src(dt, static_cast<size_t>(naive::src_elems(p)), offset_bytes(dt, offset_elements));
    diff_src.fill_sentinel();
    ASSERT_EQ(deconv_backward(train.get(), nullptr, bw.data(), bdd.data(), diff_src.data(), DECONV_REQ_WRITE, nullptr,
                      DECONV_REQ_NULL, nullptr, DECONV_REQ_NULL),
            DECONV_OK)
            << deconv_last_error();
    EXPECT_TRUE(diff_src.guards_intact()) << "wrote outside diff_src";
    const Vec got_src = harness::from_layout(p, layout, diff_src.get(), p.in_channels, p.in_size);
    EXPECT_TRUE(harness::compare("diff_src", got_src, harness::expect_backward_data(p, w, dd), dt));
}

// The depthwise forward on channels-last data (impl/depthwise_forward.cpp) stages each row of a
// written output of 4 MiB or more and streams it (impl/depthwise_row_staging.hpp): 20 channels (a partial vector), rows of 128
// pixels (whole cache lines) and of 127 (not), the same buffer offsets; written and added (an add
// is not staged). Pinned to the kernel (DECONV_FORMULATION=depthwise) it must run there.
using DepthwiseCase = std::tuple<deconv_dtype, Variant>;

// DECONV_FORMULATION=depthwise on a CPU the kernels run on; for the data gradient on
// channels-last data also DECONV_DATA_LAYOUT=channels_last (else timing may pick the
// channels-first planes).
bool pinned_to_the_kernels() {
    const char *pinned = std::getenv("DECONV_FORMULATION");
    return pinned && std::string(pinned) == "depthwise"
            && (__builtin_cpu_supports("avx512bw") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
}
bool pinned_to_the_rows_kernel() {
    const char *layout = std::getenv("DECONV_DATA_LAYOUT");
    return pinned_to_the_kernels() && layout && std::string(layout) == "channels_last";
}
class StreamedDepthwiseRows : public ::testing::TestWithParam<DepthwiseCase> {};

// A depthwise forward of 4 MiB or more on `layout`, written and added, at the variant's offset;
// `pinned`: the run is pinned to the library's kernel on that layout.
void check_streamed_depthwise_forward(deconv_dtype dt, const Variant &variant, deconv_layout layout, bool pinned) {
    const auto [bias, adj, offset_elements] = variant;
    naive::Problem p;
    p.batch = 8;
    p.groups = p.in_channels = p.out_channels = 20;
    p.in_size = {64, 64, 1};
    p.kernel = {3, 3, 1};
    p.stride = {2, 2, 1};
    p.pad = {1, 1, 0};
    p.adj = {adj, adj, 0};
    p.bias = bias;
    const size_t element = dt == DECONV_BF16 ? 2 : 4;
    const int offset = offset_elements < 0 ? 16 : offset_elements * static_cast<int>(element);

    std::mt19937_64 rng(20261207);
    const Vec src = harness::random_values(rng, naive::src_elems(p), dt);
    const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
    const Vec b = bias ? harness::random_values(rng, p.out_channels, dt) : Vec{};
    const Vec prior = harness::random_values(rng, naive::dst_elems(p), dt);
    const auto out = naive::output_size(p);
    ASSERT_GE(naive::dst_elems(p) * int64_t(element), int64_t(4) << 20);
    const harness::Expected expected = harness::expect_forward(p, src, w, b, false);

    harness::Handle h(p, dt, layout, DECONV_INFERENCE);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());
    if (pinned) {
        EXPECT_EQ(h.impl(DECONV_PASS_FORWARD).rfind("libdeconv_dw:", 0), 0u);
    }
    harness::Buffer bs = harness::src_buffer(p, dt, layout, src), bw(dt, w), bb(dt, b);
    for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
        SCOPED_TRACE(harness::req_str(r));
        harness::Buffer dst(dt, static_cast<size_t>(naive::dst_elems(p)), offset);
        if (r == DECONV_REQ_ADD)
            dst.set(harness::to_layout(p, layout, prior, p.out_channels, out));
        else
            dst.fill_sentinel();
        ASSERT_EQ(deconv_forward(h.get(), bs.data(), bw.data(), bias ? bb.data() : nullptr, dst.data(), r), DECONV_OK)
                << deconv_last_error();
        EXPECT_TRUE(dst.guards_intact()) << "wrote outside dst";
        const Vec got = harness::from_layout(p, layout, dst.get(), p.out_channels, out);
        EXPECT_TRUE(harness::compare("dst", got, expected, dt, r == DECONV_REQ_ADD ? &prior : nullptr));
    }
}

TEST_P(StreamedDepthwiseRows, ForwardMatchesReference) {
    const auto [dt, variant] = GetParam();
    check_streamed_depthwise_forward(dt, variant, DECONV_CHANNELS_LAST, pinned_to_the_kernels());
}

// The depthwise data gradient on channels-last data (impl/depthwise_backward_data_rows.cpp)
// stages and streams its rows alike: stride 1, so that the result is as large as the output
// gradient; rows of 128 pixels and of 127 (adj picks 128 - adj), the same offsets.
TEST_P(StreamedDepthwiseRows, DataGradientMatchesReference) {
    const auto [dt, variant] = GetParam();
    const auto [unused_bias, narrow, offset_elements] = variant;
    (void)unused_bias;
    naive::Problem p;
    p.batch = 8;
    p.groups = p.in_channels = p.out_channels = 20;
    p.in_size = {128 - narrow, 128 - narrow, 1};
    p.kernel = {3, 3, 1};
    p.stride = {1, 1, 1};
    p.pad = {1, 1, 0};
    p.bias = false;
    const size_t element = dt == DECONV_BF16 ? 2 : 4;
    const int offset = offset_elements < 0 ? 16 : offset_elements * static_cast<int>(element);

    std::mt19937_64 rng(20261208);
    const Vec w = harness::random_values(rng, naive::weights_elems(p), dt);
    const Vec dd = harness::random_values(rng, naive::dst_elems(p), dt);
    const Vec prior = harness::random_values(rng, naive::src_elems(p), dt);
    ASSERT_GE(naive::src_elems(p) * int64_t(element), int64_t(4) << 20);
    const harness::Expected expected = harness::expect_backward_data(p, w, dd);

    harness::Handle h(p, dt, DECONV_CHANNELS_LAST, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());
    if (pinned_to_the_rows_kernel()) {
        EXPECT_EQ(h.impl(DECONV_PASS_BACKWARD_DATA).rfind("libdeconv_dw:", 0), 0u);
    }
    harness::Buffer bw(dt, w), bdd = harness::dst_buffer(p, dt, DECONV_CHANNELS_LAST, dd);
    for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
        SCOPED_TRACE(harness::req_str(r));
        harness::Buffer ds(dt, static_cast<size_t>(naive::src_elems(p)), offset);
        if (r == DECONV_REQ_ADD)
            ds.set(harness::to_layout(p, DECONV_CHANNELS_LAST, prior, p.in_channels, p.in_size));
        else
            ds.fill_sentinel();
        ASSERT_EQ(deconv_backward(h.get(), nullptr, bw.data(), bdd.data(), ds.data(), r, nullptr, DECONV_REQ_NULL,
                          nullptr, DECONV_REQ_NULL),
                DECONV_OK)
                << deconv_last_error();
        EXPECT_TRUE(ds.guards_intact()) << "wrote outside diff_src";
        const Vec got = harness::from_layout(p, DECONV_CHANNELS_LAST, ds.get(), p.in_channels, p.in_size);
        EXPECT_TRUE(harness::compare("diff_src", got, expected, dt, r == DECONV_REQ_ADD ? &prior : nullptr));
    }
}

// The depthwise forward on channels-first planes (impl/depthwise_plane_forward.cpp) streams the
// vectors of its rows of 127 and 128 pixels that fall on a line, at the same offsets (none of
// them do 16 bytes past a line). Pinned (DECONV_FORMULATION=depthwise,
// DECONV_DATA_LAYOUT=channels_first) it must run there.
class StreamedDepthwisePlanes : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(StreamedDepthwisePlanes, ForwardMatchesReference) {
    const auto [dt, variant] = GetParam();
    const char *layout = std::getenv("DECONV_DATA_LAYOUT");
    const bool pinned = pinned_to_the_kernels() && layout && std::string(layout) == "channels_first"
            && __builtin_cpu_supports("avx512bw");
    check_streamed_depthwise_forward(dt, variant, DECONV_CHANNELS_FIRST, pinned);
}

INSTANTIATE_TEST_SUITE_P(Cases, StreamedDepthwisePlanes,
        ::testing::Combine(::testing::Values(DECONV_F32, DECONV_BF16),
                ::testing::Values(Variant{true, 1, 0}, Variant{false, 1, -1}, Variant{true, 0, 1},
                        Variant{false, 0, 0}, Variant{true, 1, -1})));

INSTANTIATE_TEST_SUITE_P(Cases, StreamedDepthwiseRows,
        ::testing::Combine(::testing::Values(DECONV_F32, DECONV_BF16),
                ::testing::Values(Variant{true, 1, 0}, Variant{false, 1, -1}, Variant{true, 0, 1},
                        Variant{false, 0, 0})));

INSTANTIATE_TEST_SUITE_P(Cases, StreamedOutputs,
        ::testing::Combine(::testing::Values(DECONV_F32, DECONV_BF16),
                ::testing::Values(DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST),
                ::testing::Values(Variant{true, 0, 0}, Variant{false, 0, -1}, Variant{false, 0, 1},
                        Variant{true, 1, 1}, Variant{true, 0, -1})));

} // namespace
