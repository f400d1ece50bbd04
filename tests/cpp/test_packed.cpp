// Weight-format control: deconv_set_weights packs the weights once; deconv_forward with
// weights == NULL must then compute exactly (bit for bit) what passing the same weights every
// call computes. Also: set_weights again replaces them, the caller's buffers are not kept, and
// explicit weights always win over the packed ones.
#include <deconv.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "naive_deconv.hpp"

namespace {

using HandlePtr = std::unique_ptr<deconv, decltype(&deconv_destroy)>;
using Bytes = std::vector<unsigned char>;

struct Case {
    std::string name;
    deconv_dtype dtype;
    deconv_layout layout;
    naive::Problem p;
};

naive::Problem base(int rank, int64_t ic, int64_t oc, int64_t groups, bool bias) {
    naive::Problem p;
    p.rank = rank;
    p.batch = 2;
    p.in_channels = ic;
    p.out_channels = oc;
    p.groups = groups;
    const int64_t in[3] = {6, 5, 4}, k[3] = {3, 2, 3}, s[3] = {2, 1, 2}, pad[3] = {1, 0, 1}, adj[3] = {1, 0, 1};
    for (int d = 0; d < rank; d++) {
        // rank-1/2 problems take the last dims so that the 1D problem is the interesting one.
        const int src = 3 - rank + d;
        p.in_size[d] = in[src];
        p.kernel[d] = k[src];
        p.stride[d] = s[src];
        p.pad[d] = pad[src];
        p.adj[d] = adj[src];
    }
    if (rank >= 2) p.dilate[rank - 2] = 2;
    p.bias = bias;
    return p;
}

std::vector<Case> cases() {
    std::vector<Case> v;
    struct Shape {
        const char *name;
        int rank;
        int64_t ic, oc, groups;
    };
    // Channel counts of 16+ so that oneDNN picks blocked weights and packing really reorders.
    const Shape shapes[] = {{"2d", 2, 32, 16, 1},       {"2d_groups", 2, 32, 16, 2},
                            {"2d_depthwise", 2, 16, 16, 16}, {"1d", 1, 16, 32, 1},
                            {"3d_groups", 3, 32, 32, 2}};
    // Matrix products (no pad, stride = kernel or a single input pixel), whose channels-last
    // forward as a matmul packs its weights with the taps first (impl/gemm_formulation.cpp).
    auto matrix_product = [](int rank, bool bias) {
        naive::Problem p;
        p.rank = rank;
        p.batch = 3;
        p.in_channels = 16;
        p.out_channels = 32;
        for (int d = 0; d < rank; d++) {
            p.in_size[d] = rank == 1 ? 5 : 1;
            p.kernel[d] = rank == 1 ? 2 : 4;
            p.stride[d] = rank == 1 ? 2 : 1;
        }
        p.bias = bias;
        return p;
    };
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16})
        for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST})
            for (bool bias : {true, false}) {
                const std::string prefix = std::string(dt == DECONV_F32 ? "f32" : "bf16") +
                                           (l == DECONV_CHANNELS_FIRST ? "_ncx_" : "_nxc_") +
                                           (bias ? "bias_" : "nobias_");
                for (const Shape &s : shapes)
                    v.push_back({prefix + s.name, dt, l, base(s.rank, s.ic, s.oc, s.groups, bias)});
                v.push_back({prefix + "matrix_1x1", dt, l, matrix_product(2, bias)});
                v.push_back({prefix + "matrix_1d", dt, l, matrix_product(1, bias)});
            }
    return v;
}

deconv_params params(const Case &c) {
    const naive::Problem &p = c.p;
    deconv_params prm;
    deconv_params_init(&prm);
    prm.rank = p.rank;
    prm.batch = p.batch;
    prm.in_channels = p.in_channels;
    prm.out_channels = p.out_channels;
    prm.groups = p.groups;
    for (int d = 0; d < p.rank; d++) {
        prm.in_size[d] = p.in_size[d];
        prm.kernel[d] = p.kernel[d];
        prm.stride[d] = p.stride[d];
        prm.pad[d] = p.pad[d];
        prm.dilate[d] = p.dilate[d];
        prm.adj[d] = p.adj[d];
    }
    prm.no_bias = p.bias ? 0 : 1;
    prm.dtype = c.dtype;
    prm.layout = c.layout;
    prm.mode = DECONV_INFERENCE;
    return prm;
}

// Values exactly representable in the data type (bf16: rounded), in logical order.
std::vector<double> values(const Case &c, int64_t n, double phase) {
    std::vector<double> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); i++) {
        const double x = std::sin(0.37 * double(i) + phase);
        v[i] = c.dtype == DECONV_BF16 ? naive::bf16_round(x) : double(float(x));
    }
    return v;
}

Bytes to_bytes(const Case &c, const std::vector<double> &v) {
    Bytes b(v.size() * (c.dtype == DECONV_F32 ? 4 : 2));
    for (size_t i = 0; i < v.size(); i++) {
        const float f = float(v[i]);
        if (c.dtype == DECONV_F32) {
            std::memcpy(&b[4 * i], &f, 4);
        } else {
            const uint16_t h = naive::bf16_bits(f);
            std::memcpy(&b[2 * i], &h, 2);
        }
    }
    return b;
}

std::vector<double> to_values(const Case &c, const Bytes &b) {
    const size_t es = c.dtype == DECONV_F32 ? 4 : 2;
    std::vector<double> v(b.size() / es);
    for (size_t i = 0; i < v.size(); i++) {
        if (c.dtype == DECONV_F32) {
            float f;
            std::memcpy(&f, &b[4 * i], 4);
            v[i] = f;
        } else {
            uint16_t h;
            std::memcpy(&h, &b[2 * i], 2);
            v[i] = naive::bf16_to_float(h);
        }
    }
    return v;
}

void *ptr(Bytes &b) { return b.empty() ? nullptr : b.data(); }

class Packed : public ::testing::TestWithParam<Case> {
  protected:
    void SetUp() override {
        const Case &c = GetParam();
        prm = params(c);
        out = naive::output_size(c.p);
        src_v = values(c, naive::src_elems(c.p), 0.1);
        const std::vector<double> src_l =
            c.layout == DECONV_CHANNELS_LAST ? naive::to_channels_last(c.p, src_v, c.p.in_channels, c.p.in_size)
                                             : src_v;
        src = to_bytes(c, src_l);
        for (int k = 0; k < 2; k++) {
            w_v[k] = values(c, naive::weights_elems(c.p), 0.2 + k);
            w[k] = to_bytes(c, w_v[k]);
            if (c.p.bias) {
                b_v[k] = values(c, c.p.out_channels, 0.5 + k);
                b[k] = to_bytes(c, b_v[k]);
            }
        }
        dst_bytes = size_t(naive::dst_elems(c.p)) * (c.dtype == DECONV_F32 ? 4 : 2);
    }
    HandlePtr create() const {
        deconv *h = nullptr;
        deconv_status s = deconv_create(&prm, &h);
        EXPECT_EQ(s, DECONV_OK) << deconv_last_error();
        return HandlePtr(s == DECONV_OK ? h : nullptr, &deconv_destroy);
    }
    // Forward with the given weights/bias (NULL: the packed ones); dst starts as `init`.
    Bytes forward(deconv *h, void *weights, void *bias, deconv_req req = DECONV_REQ_WRITE, const Bytes *init = nullptr) {
        Bytes dst = init ? *init : Bytes(dst_bytes, 0);
        EXPECT_EQ(deconv_forward(h, src.data(), weights, bias, dst.data(), req), DECONV_OK) << deconv_last_error();
        return dst;
    }
    // The library's output against the naive reference for weights/bias set k.
    void expect_matches_reference(const Bytes &dst, int k) {
        const Case &c = GetParam();
        std::vector<double> got = to_values(c, dst);
        if (c.layout == DECONV_CHANNELS_LAST) got = naive::to_channels_first(c.p, got, c.p.out_channels, out);
        const std::vector<double> ref = naive::forward(c.p, src_v, w_v[k], c.p.bias ? b_v[k] : std::vector<double>{});
        double err = 0, scale = 1e-30;
        for (size_t i = 0; i < ref.size(); i++) {
            err = std::max(err, std::fabs(got[i] - ref[i]));
            scale = std::max(scale, std::fabs(ref[i]));
        }
        EXPECT_LE(err / scale, c.dtype == DECONV_F32 ? 1e-5 : 1e-2) << naive::to_string(c.p);
    }

    deconv_params prm{};
    std::array<int64_t, 3> out{};
    std::vector<double> src_v, w_v[2], b_v[2];
    Bytes src, w[2], b[2];
    size_t dst_bytes = 0;
};

TEST_P(Packed, PackedEqualsUnpacked) {
    HandlePtr h = create();
    ASSERT_TRUE(h);
    const Bytes unpacked = forward(h.get(), ptr(w[0]), ptr(b[0]));
    ASSERT_EQ(deconv_set_weights(h.get(), ptr(w[0]), ptr(b[0])), DECONV_OK) << deconv_last_error();
    const Bytes packed = forward(h.get(), nullptr, nullptr);
    EXPECT_TRUE(packed == unpacked) << "packed and unpacked forward differ";
    expect_matches_reference(packed, 0);
    // With req ADD too (the accumulation path differs from WRITE).
    const Bytes init = to_bytes(GetParam(), values(GetParam(), naive::dst_elems(GetParam().p), 0.9));
    EXPECT_TRUE(forward(h.get(), nullptr, nullptr, DECONV_REQ_ADD, &init) ==
                forward(h.get(), ptr(w[0]), ptr(b[0]), DECONV_REQ_ADD, &init))
        << "packed and unpacked forward with req ADD differ";
    // And against a handle that never saw set_weights.
    HandlePtr fresh = create();
    ASSERT_TRUE(fresh);
    EXPECT_TRUE(forward(fresh.get(), ptr(w[0]), ptr(b[0])) == packed);
}

TEST_P(Packed, SetWeightsAgainReplacesThem) {
    HandlePtr h = create(), fresh = create();
    ASSERT_TRUE(h && fresh);
    ASSERT_EQ(deconv_set_weights(h.get(), ptr(w[0]), ptr(b[0])), DECONV_OK) << deconv_last_error();
    const Bytes first = forward(h.get(), nullptr, nullptr);
    ASSERT_EQ(deconv_set_weights(h.get(), ptr(w[1]), ptr(b[1])), DECONV_OK) << deconv_last_error();
    const Bytes second = forward(h.get(), nullptr, nullptr);
    EXPECT_TRUE(second != first) << "the second deconv_set_weights had no effect";
    EXPECT_TRUE(second == forward(fresh.get(), ptr(w[1]), ptr(b[1])));
    expect_matches_reference(second, 1);
}

TEST_P(Packed, CallerBuffersAreNotKept) {
    HandlePtr h = create(), fresh = create();
    ASSERT_TRUE(h && fresh);
    Bytes wc = w[0], bc = b[0];
    ASSERT_EQ(deconv_set_weights(h.get(), ptr(wc), ptr(bc)), DECONV_OK) << deconv_last_error();
    // Overwrite, then free, the caller's copies: the handle must have its own.
    wc = w[1];
    bc = b[1];
    Bytes().swap(wc);
    Bytes().swap(bc);
    EXPECT_TRUE(forward(h.get(), nullptr, nullptr) == forward(fresh.get(), ptr(w[0]), ptr(b[0])));
}

TEST_P(Packed, ExplicitWeightsWinOverPackedOnes) {
    HandlePtr h = create(), fresh = create();
    ASSERT_TRUE(h && fresh);
    ASSERT_EQ(deconv_set_weights(h.get(), ptr(w[0]), ptr(b[0])), DECONV_OK) << deconv_last_error();
    const Bytes packed = forward(h.get(), nullptr, nullptr);
    EXPECT_TRUE(forward(h.get(), ptr(w[1]), ptr(b[1])) == forward(fresh.get(), ptr(w[1]), ptr(b[1])));
    // ... and do not replace the packed ones.
    EXPECT_TRUE(forward(h.get(), nullptr, nullptr) == packed);
}

INSTANTIATE_TEST_SUITE_P(All, Packed, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

}  // namespace
