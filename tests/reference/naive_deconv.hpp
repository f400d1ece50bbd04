// Naive reference for transposed convolution ("deconvolution") with MXNet semantics,
// written straight from the definition in SEMANTICS.md. Header-only C++17, no library
// includes, double accumulation. Slow on purpose: it is the oracle the tests trust.
//
// Definition (per spatial dim):  o = i * stride + k * dilate - pad, terms with o outside
// [0, out) are skipped;
//   dst[n][g*OCg+oc][o] += src[n][g*ICg+ic][i] * w[g*ICg+ic][oc][k]   (+ bias[g*OCg+oc])
// Tensors are channels-first and flat: data (N, C, sp...), weights (IC, OC/G, k...).
// Unused spatial dims (index >= rank) are treated as size 1 / kernel 1 / stride 1 / pad 0.
#ifndef NAIVE_DECONV_HPP
#define NAIVE_DECONV_HPP

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace naive {

struct Problem {
    int rank = 2;
    int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
    std::array<int64_t, 3> in_size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
        dilate{1, 1, 1}, adj{0, 0, 0}, target_shape{0, 0, 0};
    bool bias = true;
};

inline bool has_target_shape(const Problem& p) {
    for (int d = 0; d < p.rank; ++d)
        if (p.target_shape[d] != 0) return true;
    return false;
}

// pad/adj actually used: the given ones, or MXNet's InferPad from target_shape.
inline void effective_pad_adj(const Problem& p, std::array<int64_t, 3>& pad,
                              std::array<int64_t, 3>& adj) {
    pad = {0, 0, 0};
    adj = {0, 0, 0};
    const bool ts = has_target_shape(p);
    for (int d = 0; d < p.rank; ++d) {
        if (ts) {
            const int64_t dk = p.dilate[d] * (p.kernel[d] - 1) + 1;
            const int64_t total = p.stride[d] * (p.in_size[d] - 1) + dk;
            const int64_t excess = total - p.target_shape[d];
            adj[d] = excess % 2;
            pad[d] = (excess + 1) / 2;
        } else {
            pad[d] = p.pad[d];
            adj[d] = p.adj[d];
        }
    }
}

// Output spatial size; entries >= rank are 1.
inline std::array<int64_t, 3> output_size(const Problem& p) {
    std::array<int64_t, 3> pad, adj, out{1, 1, 1};
    effective_pad_adj(p, pad, adj);
    for (int d = 0; d < p.rank; ++d) {
        const int64_t dk = p.dilate[d] * (p.kernel[d] - 1) + 1;
        out[d] = p.stride[d] * (p.in_size[d] - 1) + dk - 2 * pad[d] + adj[d];
    }
    return out;
}

inline int64_t spatial_volume(const Problem& p, const std::array<int64_t, 3>& s) {
    int64_t v = 1;
    for (int d = 0; d < p.rank; ++d) v *= s[d];
    return v;
}

inline int64_t src_elems(const Problem& p) {
    return p.batch * p.in_channels * spatial_volume(p, p.in_size);
}
inline int64_t weights_elems(const Problem& p) {
    return p.in_channels * (p.out_channels / p.groups) * spatial_volume(p, p.kernel);
}
inline int64_t dst_elems(const Problem& p) {
    return p.batch * p.out_channels * spatial_volume(p, output_size(p));
}

// Human-readable description, for failure messages (enough to reproduce a case).
inline std::string to_string(const Problem& p) {
    auto arr = [&](const std::array<int64_t, 3>& a) {
        std::ostringstream s;
        s << "{";
        for (int d = 0; d < p.rank; ++d) s << (d ? "," : "") << a[d];
        s << "}";
        return s.str();
    };
    std::ostringstream s;
    s << "rank=" << p.rank << " batch=" << p.batch << " in_channels=" << p.in_channels
      << " out_channels=" << p.out_channels << " groups=" << p.groups
      << " in_size=" << arr(p.in_size) << " kernel=" << arr(p.kernel)
      << " stride=" << arr(p.stride) << " pad=" << arr(p.pad) << " dilate=" << arr(p.dilate)
      << " adj=" << arr(p.adj) << " target_shape=" << arr(p.target_shape)
      << " bias=" << (p.bias ? 1 : 0) << " -> out=" << arr(output_size(p));
    return s.str();
}

namespace detail {

// Calls f(src_index, weights_index, dst_index) once per product term of the definition.
// All three passes are sums over exactly these terms, only accumulated into different places.
template <class F>
void visit_terms(const Problem& p, F&& f) {
    std::array<int64_t, 3> pad, adj;
    effective_pad_adj(p, pad, adj);
    const std::array<int64_t, 3> out = output_size(p);
    std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, dl{1, 1, 1}, pd{0, 0, 0},
        o{1, 1, 1};
    // Map rank dims to the last positions of a 3-D (d, h, w) problem.
    const int off = 3 - p.rank;
    for (int d = 0; d < p.rank; ++d) {
        in[off + d] = p.in_size[d];
        k[off + d] = p.kernel[d];
        s[off + d] = p.stride[d];
        dl[off + d] = p.dilate[d];
        pd[off + d] = pad[d];
        o[off + d] = out[d];
    }
    const int64_t G = p.groups, ICg = p.in_channels / G, OCg = p.out_channels / G;
    const int64_t in_vol = in[0] * in[1] * in[2], out_vol = o[0] * o[1] * o[2];
    const int64_t k_vol = k[0] * k[1] * k[2];
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t g = 0; g < G; ++g)
            for (int64_t ic = 0; ic < ICg; ++ic)
                for (int64_t oc = 0; oc < OCg; ++oc) {
                    const int64_t c_in = g * ICg + ic, c_out = g * OCg + oc;
                    const int64_t src_base = (n * p.in_channels + c_in) * in_vol;
                    const int64_t dst_base = (n * p.out_channels + c_out) * out_vol;
                    const int64_t w_base = (c_in * OCg + oc) * k_vol;
                    for (int64_t kd = 0; kd < k[0]; ++kd)
                        for (int64_t kh = 0; kh < k[1]; ++kh)
                            for (int64_t kw = 0; kw < k[2]; ++kw) {
                                const int64_t w_idx = w_base + (kd * k[1] + kh) * k[2] + kw;
                                for (int64_t id = 0; id < in[0]; ++id) {
                                    const int64_t od = id * s[0] + kd * dl[0] - pd[0];
                                    if (od < 0 || od >= o[0]) continue;
                                    for (int64_t ih = 0; ih < in[1]; ++ih) {
                                        const int64_t oh = ih * s[1] + kh * dl[1] - pd[1];
                                        if (oh < 0 || oh >= o[1]) continue;
                                        for (int64_t iw = 0; iw < in[2]; ++iw) {
                                            const int64_t ow = iw * s[2] + kw * dl[2] - pd[2];
                                            if (ow < 0 || ow >= o[2]) continue;
                                            f(src_base + (id * in[1] + ih) * in[2] + iw, w_idx,
                                              dst_base + (od * o[1] + oh) * o[2] + ow);
                                        }
                                    }
                                }
                            }
                }
}

inline void check_size(const std::vector<double>& v, int64_t n, const char* what) {
    if (static_cast<int64_t>(v.size()) != n)
        throw std::invalid_argument(std::string("naive: wrong size of ") + what);
}

}  // namespace detail

inline std::vector<double> forward(const Problem& p, const std::vector<double>& src,
                                   const std::vector<double>& w,
                                   const std::vector<double>& bias /*empty if no bias*/) {
    detail::check_size(src, src_elems(p), "src");
    detail::check_size(w, weights_elems(p), "weights");
    std::vector<double> dst(static_cast<size_t>(dst_elems(p)), 0.0);
    detail::visit_terms(p, [&](int64_t si, int64_t wi, int64_t di) { dst[di] += src[si] * w[wi]; });
    if (!bias.empty()) {
        detail::check_size(bias, p.out_channels, "bias");
        const int64_t vol = spatial_volume(p, output_size(p));
        for (int64_t n = 0; n < p.batch; ++n)
            for (int64_t c = 0; c < p.out_channels; ++c)
                for (int64_t x = 0; x < vol; ++x) dst[(n * p.out_channels + c) * vol + x] += bias[c];
    }
    return dst;
}

inline std::vector<double> backward_data(const Problem& p, const std::vector<double>& w,
                                         const std::vector<double>& diff_dst) {
    detail::check_size(w, weights_elems(p), "weights");
    detail::check_size(diff_dst, dst_elems(p), "diff_dst");
    std::vector<double> ds(static_cast<size_t>(src_elems(p)), 0.0);
    detail::visit_terms(p, [&](int64_t si, int64_t wi, int64_t di) { ds[si] += w[wi] * diff_dst[di]; });
    return ds;
}

inline std::vector<double> backward_weights(const Problem& p, const std::vector<double>& src,
                                            const std::vector<double>& diff_dst) {
    detail::check_size(src, src_elems(p), "src");
    detail::check_size(diff_dst, dst_elems(p), "diff_dst");
    std::vector<double> dw(static_cast<size_t>(weights_elems(p)), 0.0);
    detail::visit_terms(p, [&](int64_t si, int64_t wi, int64_t di) { dw[wi] += src[si] * diff_dst[di]; });
    return dw;
}

inline std::vector<double> backward_bias(const Problem& p, const std::vector<double>& diff_dst) {
    detail::check_size(diff_dst, dst_elems(p), "diff_dst");
    const int64_t vol = spatial_volume(p, output_size(p));
    std::vector<double> db(static_cast<size_t>(p.out_channels), 0.0);
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < p.out_channels; ++c)
            for (int64_t x = 0; x < vol; ++x) db[c] += diff_dst[(n * p.out_channels + c) * vol + x];
    return db;
}

// Data tensors (N, C, sp...) <-> (N, sp..., C). `spatial` entries beyond rank must be 1
// (or are ignored: only the first rank entries are used).
inline std::vector<double> to_channels_last(const Problem& p, const std::vector<double>& t,
                                            int64_t channels, const std::array<int64_t, 3>& spatial) {
    const int64_t vol = spatial_volume(p, spatial);
    detail::check_size(t, p.batch * channels * vol, "tensor");
    std::vector<double> r(t.size());
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < channels; ++c)
            for (int64_t x = 0; x < vol; ++x)
                r[(n * vol + x) * channels + c] = t[(n * channels + c) * vol + x];
    return r;
}

inline std::vector<double> to_channels_first(const Problem& p, const std::vector<double>& t,
                                             int64_t channels, const std::array<int64_t, 3>& spatial) {
    const int64_t vol = spatial_volume(p, spatial);
    detail::check_size(t, p.batch * channels * vol, "tensor");
    std::vector<double> r(t.size());
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < channels; ++c)
            for (int64_t x = 0; x < vol; ++x)
                r[(n * channels + c) * vol + x] = t[(n * vol + x) * channels + c];
    return r;
}

// ---- bf16 helpers (independent of the library's own conversion) ----

// Round a float to bf16 (nearest even), as raw bits; NaN stays a quiet NaN.
inline uint16_t bf16_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
    const uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_float(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// A double rounded to the nearest bf16 value (via float; fine for test data).
inline double bf16_round(double x) { return bf16_to_float(bf16_bits(static_cast<float>(x))); }

inline std::vector<double> abs_values(const std::vector<double>& v) {
    std::vector<double> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = std::fabs(v[i]);
    return r;
}

}  // namespace naive

#endif  // NAIVE_DECONV_HPP
