// The MXNet test vectors of SEMANTICS.md, run through the C API and checked against the naive
// reference and, where MXNet compared with convolution, against a direct convolution written
// here in "gather" form (independent of the reference's scatter loops).
#include <gtest/gtest.h>

#include <random>

#include "harness.hpp"

using namespace harness;

namespace {

Problem make(int rank, int64_t n, int64_t c, int64_t nf, std::array<int64_t, 3> in,
             std::array<int64_t, 3> k, std::array<int64_t, 3> s = {1, 1, 1},
             std::array<int64_t, 3> pad = {0, 0, 0}, bool bias = false) {
    Problem p;
    p.rank = rank;
    p.batch = n;
    p.in_channels = c;
    p.out_channels = nf;
    p.in_size = in;
    p.kernel = k;
    p.stride = s;
    p.pad = pad;
    p.bias = bias;
    return p;
}

// Deconvolution output as convolution's data gradient, in gather form: every output element
// o collects src[i] * w[k] over the (i, k) with i * stride + k * dilate - pad == o.
Vec conv_data_grad(const Problem& p, const Vec& dy, const Vec& w) {
    std::array<int64_t, 3> pad, adj;
    naive::effective_pad_adj(p, pad, adj);
    const auto out = naive::output_size(p);
    const int r = p.rank;
    const int64_t G = p.groups, ICg = p.in_channels / G, OCg = p.out_channels / G;
    int64_t in_vol = 1, out_vol = 1, k_vol = 1;
    for (int d = 0; d < r; ++d) in_vol *= p.in_size[d], out_vol *= out[d], k_vol *= p.kernel[d];
    Vec dx(static_cast<size_t>(p.batch * p.out_channels * out_vol), 0.0);
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t co = 0; co < p.out_channels; ++co)
            for (int64_t oi = 0; oi < out_vol; ++oi) {
                std::array<int64_t, 3> o{0, 0, 0};
                int64_t t = oi;
                for (int d = r - 1; d >= 0; --d) o[d] = t % out[d], t /= out[d];
                const int64_t g = co / OCg, oc = co % OCg;
                double acc = 0;
                for (int64_t ki = 0; ki < k_vol; ++ki) {
                    std::array<int64_t, 3> k{0, 0, 0};
                    int64_t u = ki;
                    for (int d = r - 1; d >= 0; --d) k[d] = u % p.kernel[d], u /= p.kernel[d];
                    int64_t ii = 0;
                    bool ok = true;
                    for (int d = 0; d < r && ok; ++d) {
                        const int64_t num = o[d] + pad[d] - k[d] * p.dilate[d];
                        if (num < 0 || num % p.stride[d] != 0 || num / p.stride[d] >= p.in_size[d])
                            ok = false;
                        else
                            ii = ii * p.in_size[d] + num / p.stride[d];
                    }
                    if (!ok) continue;
                    for (int64_t ic = 0; ic < ICg; ++ic) {
                        const int64_t ci = g * ICg + ic;
                        acc += dy[(n * p.in_channels + ci) * in_vol + ii] * w[(ci * OCg + oc) * k_vol + ki];
                    }
                }
                dx[(n * p.out_channels + co) * out_vol + oi] = acc;
            }
    return dx;
}

// Convolution weight gradient for conv weights (nf, C, k): x is the conv input (the
// deconvolution's output gradient), dy the conv output gradient (the deconvolution's input).
Vec conv_weight_grad(const Problem& p, const Vec& x, const Vec& dy) {
    std::array<int64_t, 3> pad, adj;
    naive::effective_pad_adj(p, pad, adj);
    const auto out = naive::output_size(p);
    const int r = p.rank;
    const int64_t nf = p.in_channels, C = p.out_channels;  // groups == 1 here
    int64_t in_vol = 1, out_vol = 1, k_vol = 1;
    for (int d = 0; d < r; ++d) in_vol *= p.in_size[d], out_vol *= out[d], k_vol *= p.kernel[d];
    Vec dw(static_cast<size_t>(nf * C * k_vol), 0.0);
    for (int64_t f = 0; f < nf; ++f)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t ki = 0; ki < k_vol; ++ki) {
                std::array<int64_t, 3> k{0, 0, 0};
                int64_t u = ki;
                for (int d = r - 1; d >= 0; --d) k[d] = u % p.kernel[d], u /= p.kernel[d];
                double acc = 0;
                for (int64_t n = 0; n < p.batch; ++n)
                    for (int64_t yi = 0; yi < in_vol; ++yi) {
                        int64_t t = yi, xi = 0, mul = 1;
                        bool ok = true;
                        for (int d = r - 1; d >= 0; --d) {
                            const int64_t y = t % p.in_size[d];
                            t /= p.in_size[d];
                            const int64_t xpos = y * p.stride[d] + k[d] * p.dilate[d] - pad[d];
                            if (xpos < 0 || xpos >= out[d]) ok = false;
                            xi += xpos * mul;
                            mul *= out[d];
                        }
                        if (ok)
                            acc += x[(n * C + c) * out_vol + xi] * dy[(n * nf + f) * in_vol + yi];
                    }
                dw[(f * C + c) * k_vol + ki] = acc;
            }
    return dw;
}

// MXNet's assert_almost_equal: |a - b| <= atol + rtol * |b|.
::testing::AssertionResult almost_equal(const Vec& a, const Vec& b, double rtol, double atol) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "size mismatch";
    for (size_t i = 0; i < a.size(); ++i)
        if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i])))
            return ::testing::AssertionFailure()
                   << "element " << i << ": " << a[i] << " vs " << b[i];
    return ::testing::AssertionSuccess();
}

Vec normal_values(std::mt19937_64& rng, size_t n, double mean, double sd) {
    std::normal_distribution<double> d(mean, sd);
    Vec v(n);
    for (auto& x : v) x = static_cast<float>(d(rng));
    return v;
}

}  // namespace

// ---- target_shape: shape inference (MXNet test_deconvolution target_shape cases) ----

TEST(MxnetTargetShape, OutputShapeAndSizes) {
    struct C {
        int rank;
        std::array<int64_t, 3> in, target, pad, adj;
    } cases[] = {
        {2, {4, 4, 1}, {8, 8, 0}, {99, 99, 0}, {101, 101, 0}},
        {2, {4, 4, 1}, {0, 0, 0}, {1, 1, 0}, {1, 1, 0}},
        {1, {4, 1, 1}, {8, 0, 0}, {99, 0, 0}, {101, 0, 0}},
        {1, {4, 1, 1}, {0, 0, 0}, {1, 0, 0}, {1, 0, 0}},
    };
    for (const auto& c : cases) {
        Problem p = make(c.rank, 2, 3, 5, c.in, {3, 3, 1}, {2, 2, 1});
        p.target_shape = c.target;
        p.pad = c.pad;
        p.adj = c.adj;
        SCOPED_TRACE(naive::to_string(p));
        const deconv_params prm = make_params(p);
        int64_t out[DECONV_MAX_RANK] = {-1, -1, -1};
        ASSERT_EQ(deconv_output_shape(&prm, out), DECONV_OK) << deconv_last_error();
        for (int d = 0; d < c.rank; ++d) EXPECT_EQ(out[d], 8) << "dim " << d;
        deconv_sizes sz;
        ASSERT_EQ(deconv_buffer_sizes(&prm, &sz), DECONV_OK) << deconv_last_error();
        EXPECT_EQ(sz.src, c.rank == 2 ? 2 * 3 * 16 : 2 * 3 * 4);
        EXPECT_EQ(sz.dst, c.rank == 2 ? 2 * 5 * 64 : 2 * 5 * 8);
        EXPECT_EQ(sz.weights, 3 * 5 * (c.rank == 2 ? 9 : 3));
        EXPECT_EQ(sz.bias, 0);
        EXPECT_EQ(naive::output_size(p)[0], 8);
    }
}

// The numbers with target_shape must use the derived pad/adj (MXNet's oneDNN path used the
// given pad instead): the pad-99 problem must equal the pad-1/adj-1 one and the reference.
TEST(MxnetTargetShape, NumbersUseDerivedPad) {
    for (int rank : {1, 2}) {
        for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST}) {
            Problem pt = make(rank, 2, 3, 5, {4, 4, 1}, {3, 3, 1}, {2, 2, 1}, {99, 99, 0}, true);
            pt.adj = {101, 101, 0};
            pt.target_shape = {8, rank == 2 ? 8 : 0, 0};
            Problem pp = make(rank, 2, 3, 5, {4, 4, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, true);
            pp.adj = {1, 1, 0};
            SCOPED_TRACE(naive::to_string(pt) + " " + layout_str(l));
            std::mt19937_64 rng(7);
            const Vec src = random_values(rng, naive::src_elems(pt), DECONV_F32);
            const Vec w = random_values(rng, naive::weights_elems(pt), DECONV_F32);
            const Vec b = random_values(rng, 5, DECONV_F32);
            const Vec got_t = lib_forward(pt, src, w, b, DECONV_F32, l);
            const Vec got_p = lib_forward(pp, src, w, b, DECONV_F32, l);
            EXPECT_TRUE(compare("dst(target_shape)", got_t, expect_forward(pt, src, w, b), DECONV_F32));
            EXPECT_TRUE(compare("dst(pad 1, adj 1)", got_p, expect_forward(pp, src, w, b), DECONV_F32));
        }
    }
}

// ---- deconvolution == convolution data gradient (check_deconvolution_forward_backward) ----

struct DataGradCase {
    int rank;
    int64_t n, c, size, k, s, p;
};

void PrintTo(const DataGradCase& c, std::ostream* os) {
    *os << "rank " << c.rank << " data (" << c.n << "," << c.c << "," << c.size << "...) k " << c.k
        << " s " << c.s << " p " << c.p;
}

class MxnetDeconvIsConvDataGrad : public ::testing::TestWithParam<DataGradCase> {};

TEST_P(MxnetDeconvIsConvDataGrad, WriteAndAdd) {
    const DataGradCase c = GetParam();
    // The conv maps x (N, C, size) -> y (N, nf = C, conv_out); the deconvolution maps y back.
    const int64_t conv_out = (c.size + 2 * c.p - c.k) / c.s + 1;
    std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, pad{0, 0, 0};
    for (int d = 0; d < c.rank; ++d) in[d] = conv_out, k[d] = c.k, s[d] = c.s, pad[d] = c.p;
    const Problem p = make(c.rank, c.n, c.c, c.c, in, k, s, pad, false);
    SCOPED_TRACE(naive::to_string(p));
    for (int d = 0; d < c.rank; ++d) ASSERT_EQ(naive::output_size(p)[d], c.size);

    std::mt19937_64 rng(11);
    const Vec y = random_values(rng, naive::src_elems(p), DECONV_F32);
    const Vec w = normal_values(rng, naive::weights_elems(p), 0, 1);
    const Vec direct = conv_data_grad(p, y, w);
    const Expected ref = expect_forward(p, y, w, {});

    Handle h(p, DECONV_F32, DECONV_CHANNELS_FIRST, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());
    Buffer by(DECONV_F32, y), bw(DECONV_F32, w);
    Buffer bd(DECONV_F32, static_cast<size_t>(naive::dst_elems(p)));
    ASSERT_EQ(deconv_forward(h.get(), by.data(), bw.data(), nullptr, bd.data(), DECONV_REQ_WRITE),
              DECONV_OK)
        << deconv_last_error();
    EXPECT_TRUE(almost_equal(bd.get(), direct, 1e-3, 1e-3));
    EXPECT_TRUE(compare("dst", bd.get(), ref, DECONV_F32));

    // Add request: the result accumulates onto what the buffer held.
    const Vec prefill = random_values(rng, bd.size(), DECONV_F32);
    bd.set(prefill);
    ASSERT_EQ(deconv_forward(h.get(), by.data(), bw.data(), nullptr, bd.data(), DECONV_REQ_ADD),
              DECONV_OK)
        << deconv_last_error();
    Vec sum = direct;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += prefill[i];
    EXPECT_TRUE(almost_equal(bd.get(), sum, 1e-3, 1e-3));
    EXPECT_TRUE(compare("dst(add)", bd.get(), ref, DECONV_F32, &prefill));
    EXPECT_TRUE(bd.guards_intact());

    // And the backward-data pass is the convolution itself: <deconv(y), x> == <y, conv(x)>.
    const Vec x = random_values(rng, naive::dst_elems(p), DECONV_F32);
    Buffer bx(DECONV_F32, x), bdy(DECONV_F32, y.size());
    ASSERT_EQ(deconv_backward(h.get(), nullptr, bw.data(), bx.data(), bdy.data(), DECONV_REQ_WRITE,
                              nullptr, DECONV_REQ_NULL, nullptr, DECONV_REQ_NULL),
              DECONV_OK)
        << deconv_last_error();
    double lhs = 0, rhs = 0, mag = 0;
    const Vec conv_x = bdy.get();
    for (size_t i = 0; i < x.size(); ++i) lhs += direct[i] * x[i], mag += std::fabs(direct[i] * x[i]);
    for (size_t i = 0; i < y.size(); ++i) rhs += y[i] * conv_x[i];
    EXPECT_NEAR(lhs, rhs, 1e-5 * mag + 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Cases, MxnetDeconvIsConvDataGrad,
                         ::testing::Values(DataGradCase{2, 1, 1, 5, 3, 1, 1},
                                           DataGradCase{2, 32, 3, 28, 3, 1, 1},
                                           DataGradCase{2, 10, 3, 403, 7, 5, 2},
                                           DataGradCase{1, 1, 1, 5, 3, 1, 1},
                                           DataGradCase{1, 32, 3, 28, 3, 1, 1},
                                           DataGradCase{1, 10, 3, 403, 7, 5, 2}));

// ---- deconvolution weight gradient == convolution weight gradient ----

struct WeightGradCase {
    int rank;
    int64_t n, size, p;
};

void PrintTo(const WeightGradCase& c, std::ostream* os) {
    *os << "rank " << c.rank << " batch " << c.n << " size " << c.size << " pad " << c.p;
}

class MxnetDeconvWeightGrad : public ::testing::TestWithParam<WeightGradCase> {};

TEST_P(MxnetDeconvWeightGrad, WriteAndAdd) {
    const WeightGradCase c = GetParam();
    // stride 1 and kernel 2p+1 keep the spatial size; nf 3, C 3 (MXNet's check_deconvolution_gradient).
    std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, pad{0, 0, 0};
    for (int d = 0; d < c.rank; ++d) in[d] = c.size, k[d] = 2 * c.p + 1, pad[d] = c.p;
    const Problem p = make(c.rank, c.n, 3, 3, in, k, {1, 1, 1}, pad, false);
    SCOPED_TRACE(naive::to_string(p));

    std::mt19937_64 rng(13);
    const Vec conv_data = random_values(rng, naive::dst_elems(p), DECONV_F32, -5, 5);  // x
    const Vec conv_out_grad = normal_values(rng, naive::src_elems(p), 0, 2);           // dy
    const Vec direct = conv_weight_grad(p, conv_data, conv_out_grad);
    const Expected ref = expect_backward_weights(p, conv_out_grad, conv_data);

    Handle h(p, DECONV_F32, DECONV_CHANNELS_FIRST, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();
    SCOPED_TRACE(h.impls());
    Buffer bsrc(DECONV_F32, conv_out_grad), bdd(DECONV_F32, conv_data);
    Buffer bdw(DECONV_F32, static_cast<size_t>(naive::weights_elems(p)));
    ASSERT_EQ(deconv_backward(h.get(), bsrc.data(), nullptr, bdd.data(), nullptr, DECONV_REQ_NULL,
                              bdw.data(), DECONV_REQ_WRITE, nullptr, DECONV_REQ_NULL),
              DECONV_OK)
        << deconv_last_error();
    EXPECT_TRUE(almost_equal(bdw.get(), direct, 1e-3, 1e-2));
    EXPECT_TRUE(compare("diff_weights", bdw.get(), ref, DECONV_F32));

    const Vec prefill = normal_values(rng, bdw.size(), 0, 1);
    bdw.set(prefill);
    ASSERT_EQ(deconv_backward(h.get(), bsrc.data(), nullptr, bdd.data(), nullptr, DECONV_REQ_NULL,
                              bdw.data(), DECONV_REQ_ADD, nullptr, DECONV_REQ_NULL),
              DECONV_OK)
        << deconv_last_error();
    Vec sum = direct;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += prefill[i];
    EXPECT_TRUE(almost_equal(bdw.get(), sum, 1e-3, 1e-2));
    EXPECT_TRUE(compare("diff_weights(add)", bdw.get(), ref, DECONV_F32, &prefill));
    EXPECT_TRUE(bdw.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(Cases, MxnetDeconvWeightGrad,
                         ::testing::Values(WeightGradCase{2, 1, 5, 1}, WeightGradCase{2, 5, 100, 3},
                                           WeightGradCase{1, 1, 5, 1}, WeightGradCase{1, 5, 100, 3}));

// ---- forward with bias == forward without bias + bias (inference) ----

struct BiasCase {
    std::vector<int64_t> shape;  // (N, C, spatial...)
    int64_t nf, k, s, p;
};

void PrintTo(const BiasCase& c, std::ostream* os) {
    *os << "data (";
    for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "," : "") << c.shape[i];
    *os << ") nf " << c.nf << " k " << c.k << " s " << c.s << " p " << c.p;
}

class MxnetForwardBias : public ::testing::TestWithParam<BiasCase> {};

TEST_P(MxnetForwardBias, EqualsNoBiasPlusBias) {
    const BiasCase c = GetParam();
    const int rank = static_cast<int>(c.shape.size()) - 2;
    std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, pad{0, 0, 0};
    for (int d = 0; d < rank; ++d) in[d] = c.shape[2 + d], k[d] = c.k, s[d] = c.s, pad[d] = c.p;
    Problem pb = make(rank, c.shape[0], c.shape[1], c.nf, in, k, s, pad, true);
    Problem pn = pb;
    pn.bias = false;
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST}) {
            SCOPED_TRACE(naive::to_string(pb) + " " + dtype_str(dt) + " " + layout_str(l));
            std::mt19937_64 rng(17);
            const Vec src = random_values(rng, naive::src_elems(pb), dt);
            const Vec w = random_values(rng, naive::weights_elems(pb), dt);
            const Vec b = random_values(rng, c.nf, dt, -4, 4);
            const Vec with = lib_forward(pb, src, w, b, dt, l);
            const Vec without = lib_forward(pn, src, w, {}, dt, l);
            const Expected eb = expect_forward(pb, src, w, b);
            EXPECT_TRUE(compare("dst(bias)", with, eb, dt));
            EXPECT_TRUE(compare("dst(no bias)", without, expect_forward(pn, src, w, {}), dt));
            // The relation itself: both sides carry their own rounding, so twice the tolerance.
            const Vec bb = broadcast_bias(pb, b);
            size_t bad = 0;
            for (size_t i = 0; i < with.size(); ++i) {
                const double tol = 2 * tolerance(dt, eb.abs_sum[i], eb.count[i], 0);
                if (!(std::fabs(with[i] - (without[i] + bb[i])) <= tol) && bad++ < 5)
                    ADD_FAILURE() << "dst[" << i << "]: " << with[i] << " != " << without[i]
                                  << " + " << bb[i];
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, MxnetForwardBias,
                         ::testing::Values(BiasCase{{1, 4, 15}, 16, 2, 2, 0},
                                           BiasCase{{8, 4, 16}, 16, 1, 3, 1},
                                           BiasCase{{1, 4, 15, 16}, 16, 2, 2, 0},
                                           BiasCase{{8, 4, 16, 16}, 16, 1, 3, 1},
                                           BiasCase{{1, 4, 3, 15, 16}, 16, 2, 2, 0},
                                           BiasCase{{8, 4, 3, 16, 16}, 16, 1, 3, 1}));

// ---- dilation: Gluon's test_deconv_dilation, exact output ----

TEST(MxnetDilation, ExactOutput) {
    // Two 3x3 images with a single 1 (resp. 2) in the centre, kernel 1..9, pad 1, dilation 2.
    // Output size: 1*(3-1) + 2*(3-1) + 1 - 2*1 = 5. The centre input i = 1 reaches
    // o = 1 + 2k - 1 = 2k, so kernel tap (kh, kw) lands at (2kh, 2kw) and every odd row/column
    // is zero. Hand-derived expected output:
    const Vec expected = {1, 0, 2, 0, 3,  0, 0, 0, 0, 0,  4,  0, 5,  0, 6,  0, 0, 0, 0, 0,
                          7, 0, 8, 0, 9,  2, 0, 4, 0, 6,  0,  0, 0,  0, 0,  8, 0, 10, 0, 12,
                          0, 0, 0, 0, 0,  14, 0, 16, 0, 18};
    Problem p = make(2, 2, 1, 1, {3, 3, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, false);
    p.dilate = {2, 2, 1};
    const Vec src = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0};
    const Vec w = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ASSERT_EQ(naive::output_size(p)[0], 5);
    EXPECT_EQ(naive::forward(p, src, w, {}), expected);  // the reference agrees by hand
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST})
            for (deconv_mode m : {DECONV_INFERENCE, DECONV_TRAINING})
                EXPECT_EQ(lib_forward(p, src, w, {}, dt, l, m), expected)
                    << dtype_str(dt) << " " << layout_str(l) << " mode " << m;
    }
}

// ---- cross-framework grid (MXNet's ONNX export test against ONNX Runtime) ----
// data (1,3,64,64) / (2,6,60,60) x nf {4,16,256} x groups {1,2} x kernel {(2,2),(3,4)} x
// stride {1,2} x pad {0,1} x adj {0,1}, adj >= stride and groups not dividing the channels
// skipped. The whole grid runs (no subsampling); one test per (data, nf, groups) keeps each
// CTest entry short. Bias alternates on/off through the grid, as the ONNX test ran both.

struct GridCase {
    int64_t n, c, size, nf, groups;
};
void PrintTo(const GridCase& g, std::ostream* os) {
    *os << "data (" << g.n << "," << g.c << "," << g.size << "," << g.size << ") nf " << g.nf
        << " groups " << g.groups;
}

class CrossFrameworkGrid : public ::testing::TestWithParam<GridCase> {};

TEST_P(CrossFrameworkGrid, Forward) {
    const GridCase gc = GetParam();
    int idx = 0;
    for (auto kernel : {std::array<int64_t, 2>{2, 2}, std::array<int64_t, 2>{3, 4}})
        for (int64_t stride : {1, 2})
            for (int64_t pad : {0, 1})
                for (int64_t adj : {0, 1}) {
                    if (adj >= stride) continue;
                    Problem p = make(2, gc.n, gc.c, gc.nf, {gc.size, gc.size, 1},
                                     {kernel[0], kernel[1], 1}, {stride, stride, 1}, {pad, pad, 0},
                                     (idx++ % 2) == 0);
                    p.groups = gc.groups;
                    p.adj = {adj, adj, 0};
                    SCOPED_TRACE(naive::to_string(p));
                    std::mt19937_64 rng(1000 + idx);
                    const Vec src = random_values(rng, naive::src_elems(p), DECONV_F32);
                    const Vec w = random_values(rng, naive::weights_elems(p), DECONV_F32);
                    const Vec b = p.bias ? random_values(rng, gc.nf, DECONV_F32) : Vec{};
                    const Expected e = expect_forward(p, src, w, b, /*exact_count=*/false);
                    // ONNX is NCHW; channels-last reuses the same reference.
                    for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST})
                        EXPECT_TRUE(compare("dst", lib_forward(p, src, w, b, DECONV_F32, l), e, DECONV_F32))
                            << layout_str(l);
                }
}

// (1,3,64,64) has no groups-2 cases: 3 channels are not divisible by 2.
INSTANTIATE_TEST_SUITE_P(Grid, CrossFrameworkGrid,
                         ::testing::Values(GridCase{1, 3, 64, 4, 1}, GridCase{1, 3, 64, 16, 1},
                                           GridCase{1, 3, 64, 256, 1}, GridCase{2, 6, 60, 4, 1},
                                           GridCase{2, 6, 60, 4, 2}, GridCase{2, 6, 60, 16, 1},
                                           GridCase{2, 6, 60, 16, 2}, GridCase{2, 6, 60, 256, 1},
                                           GridCase{2, 6, 60, 256, 2}));
