// Finite-difference checks of the library's backward pass against its own forward pass (f32).
// Loss L = sum(dst * r) with a fixed random r, so dL/dsrc = backward_data(diff_dst = r),
// dL/dweights = backward_weights(src, r), dL/dbias = backward_bias(r).
//
// The forward pass is linear in each input, so a central difference has no truncation error
// and a large step (0.5) can be used: the only error left is the f32 rounding of the affected
// dst elements, far below the tolerance (1e-3 relative + 1e-3 absolute). L is summed in
// double. The step actually taken is measured on the f32 values (x + h and x - h round).
// Perturbations are applied to the library-layout buffers, and compared there, so the check
// also holds for channels-last without any conversion.
#include <gtest/gtest.h>

#include <random>

#include "harness.hpp"

using namespace harness;

namespace {

struct FdCase {
    const char* name;
    Problem p;
    deconv_layout layout;
};

Problem numeric_shape(int rank) {
    // SEMANTICS.md: (3,3,10) k3, (3,3,10,10) k(3,3), (3,3,3,10,10) k(3,3,3), stride 2, nf 4,
    // weights (3, 4, k...). The 3-D one is (N=3, C=3, 3, 10, 10).
    Problem p;
    p.rank = rank;
    p.batch = 3;
    p.in_channels = 3;
    p.out_channels = 4;
    p.in_size = rank == 1 ? std::array<int64_t, 3>{10, 1, 1}
                : rank == 2 ? std::array<int64_t, 3>{10, 10, 1}
                            : std::array<int64_t, 3>{3, 10, 10};
    for (int d = 0; d < rank; ++d) p.kernel[d] = 3, p.stride[d] = 2;
    return p;
}

std::vector<FdCase> fd_cases() {
    std::vector<FdCase> cases;
    for (int r = 1; r <= 3; ++r)
        cases.push_back({r == 1 ? "mxnet_1d" : r == 2 ? "mxnet_2d" : "mxnet_3d", numeric_shape(r),
                         DECONV_CHANNELS_FIRST});
    // Beyond MXNet's shapes: groups, dilation, pad, adj, channels-last, target_shape, depthwise.
    Problem g;
    g.rank = 2, g.batch = 2, g.in_channels = 4, g.out_channels = 6, g.groups = 2;
    g.in_size = {4, 5, 1}, g.kernel = {3, 2, 1}, g.stride = {2, 3, 1}, g.pad = {1, 0, 0};
    g.dilate = {2, 1, 1}, g.adj = {1, 2, 0};
    cases.push_back({"grouped_dilated_adj_nhwc", g, DECONV_CHANNELS_LAST});
    Problem t;
    t.rank = 3, t.batch = 1, t.in_channels = 2, t.out_channels = 3;
    t.in_size = {2, 3, 3}, t.kernel = {2, 3, 2}, t.stride = {2, 1, 2};
    t.target_shape = {4, 4, 5};
    cases.push_back({"target_shape_3d_ndhwc", t, DECONV_CHANNELS_LAST});
    Problem d;
    d.rank = 1, d.batch = 2, d.in_channels = d.out_channels = d.groups = 5;
    d.in_size = {7, 1, 1}, d.kernel = {4, 1, 1}, d.stride = {3, 1, 1}, d.pad = {2, 0, 0};
    d.dilate = {2, 1, 1}, d.bias = false;
    cases.push_back({"depthwise_1d_nobias", d, DECONV_CHANNELS_FIRST});
    return cases;
}

void PrintTo(const FdCase& c, std::ostream* os) {
    *os << c.name << ": " << naive::to_string(c.p) << " " << layout_str(c.layout);
}

class FiniteDifference : public ::testing::TestWithParam<FdCase> {};

TEST_P(FiniteDifference, BackwardMatchesForward) {
    const FdCase& c = GetParam();
    const Problem& p = c.p;
    const deconv_dtype dt = DECONV_F32;
    const deconv_layout l = c.layout;
    SCOPED_TRACE(naive::to_string(p) + " " + layout_str(l));

    Handle h(p, dt, l, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());

    std::mt19937_64 rng(99);
    const size_t n_dst = static_cast<size_t>(naive::dst_elems(p));
    // Buffers hold library-layout values; r too, as the diff_dst of the backward pass.
    Buffer src(dt, random_values(rng, naive::src_elems(p), dt));
    Buffer w(dt, random_values(rng, naive::weights_elems(p), dt));
    Buffer bias(dt, p.bias ? random_values(rng, p.out_channels, dt) : Vec{});
    const Vec r = random_values(rng, n_dst, dt);
    Buffer rb(dt, r), dst(dt, n_dst);
    void* bias_ptr = p.bias ? bias.data() : nullptr;

    auto loss = [&]() {
        EXPECT_EQ(deconv_forward(h.get(), src.data(), w.data(), bias_ptr, dst.data(), DECONV_REQ_WRITE),
                  DECONV_OK)
            << deconv_last_error();
        const Vec y = dst.get();
        double L = 0;
        for (size_t i = 0; i < n_dst; ++i) L += y[i] * r[i];
        return L;
    };

    Buffer gs(dt, src.size()), gw(dt, w.size()), gb(dt, bias.size());
    ASSERT_EQ(deconv_backward(h.get(), src.data(), w.data(), rb.data(), gs.data(), DECONV_REQ_WRITE,
                              gw.data(), DECONV_REQ_WRITE, p.bias ? gb.data() : nullptr,
                              p.bias ? DECONV_REQ_WRITE : DECONV_REQ_NULL),
              DECONV_OK)
        << deconv_last_error();

    // d loss / d x[i] by central difference on buffer `b`, for every element.
    auto check = [&](const char* what, Buffer& b, const Buffer& grad) {
        Vec x = b.get();
        const Vec g = grad.get();
        int bad = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double x0 = x[i];
            const float xp = static_cast<float>(x0 + 0.5), xm = static_cast<float>(x0 - 0.5);
            x[i] = xp;
            b.set(x);
            const double lp = loss();
            x[i] = xm;
            b.set(x);
            const double lm = loss();
            x[i] = x0;
            b.set(x);
            const double fd = (lp - lm) / (static_cast<double>(xp) - static_cast<double>(xm));
            if (!(std::fabs(fd - g[i]) <= 1e-3 + 1e-3 * std::fabs(fd)) && bad++ < 8)
                ADD_FAILURE() << what << "[" << i << "]: backward " << g[i] << ", finite difference " << fd;
        }
        EXPECT_EQ(bad, 0) << what << ": elements whose gradient disagrees";
    };
    check("diff_src", src, gs);
    check("diff_weights", w, gw);
    if (p.bias) check("diff_bias", bias, gb);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiniteDifference, ::testing::ValuesIn(fd_cases()),
                         [](const ::testing::TestParamInfo<FdCase>& info) {
                             return std::string(info.param.name);
                         });

}  // namespace
