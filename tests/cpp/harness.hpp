// Shared helpers of the numeric tests: run the library (C API) on a naive::Problem with f32 or
// bf16 buffers in either layout, and compare with the naive reference under a tolerance that
// follows from the data type and the reduction length.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "deconv.h"
#include "naive_deconv.hpp"

namespace harness {

using naive::Problem;
using Vec = std::vector<double>;

inline const char* dtype_str(deconv_dtype dt) { return dt == DECONV_BF16 ? "bf16" : "f32"; }
inline const char* layout_str(deconv_layout l) {
    return l == DECONV_CHANNELS_LAST ? "channels_last" : "channels_first";
}
inline const char* req_str(deconv_req r) {
    return r == DECONV_REQ_WRITE ? "write" : r == DECONV_REQ_ADD ? "add" : "null";
}

inline deconv_params make_params(const Problem& p, deconv_dtype dt = DECONV_F32,
                                 deconv_layout layout = DECONV_CHANNELS_FIRST,
                                 deconv_mode mode = DECONV_TRAINING) {
    deconv_params prm;
    deconv_params_init(&prm);
    prm.rank = p.rank;
    prm.batch = p.batch;
    prm.in_channels = p.in_channels;
    prm.out_channels = p.out_channels;
    prm.groups = p.groups;
    for (int d = 0; d < 3; ++d) {
        const bool used = d < p.rank;
        prm.in_size[d] = used ? p.in_size[d] : 1;
        prm.kernel[d] = used ? p.kernel[d] : 1;
        prm.stride[d] = used ? p.stride[d] : 1;
        prm.pad[d] = used ? p.pad[d] : 0;
        prm.dilate[d] = used ? p.dilate[d] : 1;
        prm.adj[d] = used ? p.adj[d] : 0;
        prm.target_shape[d] = used ? p.target_shape[d] : 0;
    }
    prm.no_bias = p.bias ? 0 : 1;
    prm.dtype = dt;
    prm.layout = layout;
    prm.mode = mode;
    return prm;
}

// Owns a library handle; creation failure is kept (status + message), not thrown.
class Handle {
public:
    explicit Handle(const deconv_params& prm) {
        status_ = deconv_create(&prm, &h_);
        if (status_ != DECONV_OK) error_ = deconv_last_error();
    }
    Handle(const Problem& p, deconv_dtype dt, deconv_layout layout, deconv_mode mode)
        : Handle(make_params(p, dt, layout, mode)) {}
    ~Handle() { deconv_destroy(h_); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    deconv* get() const { return h_; }
    bool ok() const { return status_ == DECONV_OK && h_ != nullptr; }
    deconv_status status() const { return status_; }
    const std::string& error() const { return error_; }
    std::string impl(deconv_pass pass) const {
        const char* s = h_ ? deconv_impl_name(h_, pass) : nullptr;
        return s ? s : "(none)";
    }
    std::string impls() const {
        return "impl forward=" + impl(DECONV_PASS_FORWARD) +
               " backward_data=" + impl(DECONV_PASS_BACKWARD_DATA) +
               " backward_weights=" + impl(DECONV_PASS_BACKWARD_WEIGHTS);
    }

private:
    deconv* h_ = nullptr;
    deconv_status status_ = DECONV_INTERNAL_ERROR;
    std::string error_;
};

// A dense buffer in the library's data type, with guard bytes on both sides so that writes
// out of bounds are noticed. `line_offset` >= 0 places the data that many bytes past a 64-byte
// boundary (the library's streamed stores depend on it); by default it is wherever the vector's
// allocation puts it.
class Buffer {
public:
    static constexpr size_t kGuard = 64;
    static constexpr unsigned char kGuardByte = 0xA5;

    Buffer(deconv_dtype dt, size_t n, int line_offset = -1)
        : dt_(dt), n_(n), es_(dt == DECONV_BF16 ? 2 : 4), bytes_(2 * kGuard + n * es_ + 128, kGuardByte) {
        start_ = kGuard;
        if (line_offset >= 0) {
            const uintptr_t base = reinterpret_cast<uintptr_t>(bytes_.data());
            start_ = (base + kGuard + 63) / 64 * 64 + static_cast<size_t>(line_offset) - base;
        }
    }
    Buffer(deconv_dtype dt, const Vec& v) : Buffer(dt, v.size()) { set(v); }

    void* data() { return bytes_.data() + start_; }
    const void* data() const { return bytes_.data() + start_; }
    size_t size() const { return n_; }
    deconv_dtype dtype() const { return dt_; }

    // Values are converted to the buffer type (bf16: round to nearest even).
    void set(const Vec& v) {
        if (v.size() != n_) throw std::invalid_argument("Buffer::set: size mismatch");
        for (size_t i = 0; i < n_; ++i) {
            const float f = static_cast<float>(v[i]);
            if (dt_ == DECONV_F32) {
                std::memcpy(bytes_.data() + start_ + 4 * i, &f, 4);
            } else {
                const uint16_t b = naive::bf16_bits(f);
                std::memcpy(bytes_.data() + start_ + 2 * i, &b, 2);
            }
        }
    }
    Vec get() const {
        Vec v(n_);
        for (size_t i = 0; i < n_; ++i) {
            if (dt_ == DECONV_F32) {
                float f;
                std::memcpy(&f, bytes_.data() + start_ + 4 * i, 4);
                v[i] = f;
            } else {
                uint16_t b;
                std::memcpy(&b, bytes_.data() + start_ + 2 * i, 2);
                v[i] = naive::bf16_to_float(b);
            }
        }
        return v;
    }
    // A NaN bit pattern no computation produces, to check "untouched" bit for bit.
    void fill_sentinel() {
        for (size_t i = 0; i < n_ * es_; i += 2) {
            bytes_[start_ + i] = 0x5b;
            bytes_[start_ + i + 1] = 0xff;
        }
    }
    bool is_sentinel() const {
        for (size_t i = 0; i < n_ * es_; i += 2)
            if (bytes_[start_ + i] != 0x5b || bytes_[start_ + i + 1] != 0xff) return false;
        return true;
    }
    bool guards_intact() const {
        for (size_t i = 0; i < bytes_.size(); ++i)
            if ((i < start_ || i >= start_ + n_ * es_) && bytes_[i] != kGuardByte) return false;
        return true;
    }

private:
    deconv_dtype dt_;
    size_t n_, es_, start_ = 0;
    std::vector<unsigned char> bytes_;
};

// Random values in [lo, hi], rounded to what the data type can hold so that the reference
// sees exactly the library's inputs.
inline Vec random_values(std::mt19937_64& rng, size_t n, deconv_dtype dt, double lo = -1.0,
                         double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    Vec v(n);
    for (auto& x : v) {
        x = u(rng);
        x = dt == DECONV_BF16 ? naive::bf16_round(x) : static_cast<double>(static_cast<float>(x));
    }
    return v;
}

// Data tensors: channels-first doubles <-> the layout the handle uses.
inline Vec to_layout(const Problem& p, deconv_layout l, const Vec& cf, int64_t channels,
                     const std::array<int64_t, 3>& spatial) {
    return l == DECONV_CHANNELS_LAST ? naive::to_channels_last(p, cf, channels, spatial) : cf;
}
inline Vec from_layout(const Problem& p, deconv_layout l, const Vec& t, int64_t channels,
                       const std::array<int64_t, 3>& spatial) {
    return l == DECONV_CHANNELS_LAST ? naive::to_channels_first(p, t, channels, spatial) : t;
}
inline Buffer src_buffer(const Problem& p, deconv_dtype dt, deconv_layout l, const Vec& cf) {
    return Buffer(dt, to_layout(p, l, cf, p.in_channels, p.in_size));
}
inline Buffer dst_buffer(const Problem& p, deconv_dtype dt, deconv_layout l, const Vec& cf) {
    return Buffer(dt, to_layout(p, l, cf, p.out_channels, naive::output_size(p)));
}
inline Vec read_src(const Problem& p, deconv_layout l, const Buffer& b) {
    return from_layout(p, l, b.get(), p.in_channels, p.in_size);
}
inline Vec read_dst(const Problem& p, deconv_layout l, const Buffer& b) {
    return from_layout(p, l, b.get(), p.out_channels, naive::output_size(p));
}

// Tolerance of one output element (why: see each term).
//   S = sum of |terms| of the exact sum (products, and the bias), n = number of terms,
//   P = |value the buffer held before| for ADD (else 0).
//   f32:  u = 2^-24. Inputs are exact floats and products are formed in f32 (error u|term|);
//         a blocked/parallel f32 sum of n terms has an error that grows like sqrt(n) u S in
//         practice (the worst case n u S is never approached by such sums), so allow
//         (4 sqrt(n) + 4) u S, plus 2 u (P + S) for the final add to the prior content.
//   bf16: inputs are bf16 (the reference used the same rounded values), products are exact in
//         f32 and sums are f32, so the f32 bound applies, plus the rounding of the result to
//         bf16 (u_bf16 = 2^-8 relative of |result| <= S + P), counted twice because an ADD may
//         round the fresh result and then the sum with the prior content.
inline double tolerance(deconv_dtype dt, double S, double n, double P) {
    const double u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -8);
    double tol = (4.0 * std::sqrt(n) + 4.0) * u32 * S + 2.0 * u32 * (P + S);
    if (dt == DECONV_BF16) tol += 2.0 * u16 * (S + P);
    return tol + 1e-37;  // exact zeros must stay (nearly) exact
}

// Expected result of one output: reference value, S and n per element (see tolerance()).
struct Expected {
    Vec value, abs_sum, count;
};

// got vs (prefill + expected) elementwise; the first mismatches are listed in the message.
inline ::testing::AssertionResult compare(const char* what, const Vec& got, const Expected& e,
                                          deconv_dtype dt, const Vec* prefill = nullptr) {
    if (got.size() != e.value.size())
        return ::testing::AssertionFailure() << what << ": size " << got.size() << " != "
                                             << e.value.size();
    size_t bad = 0;
    double worst = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < got.size(); ++i) {
        const double P = prefill ? (*prefill)[i] : 0.0;
        const double want = P + e.value[i];
        const double tol = tolerance(dt, e.abs_sum[i], e.count[i], std::fabs(P));
        const double err = std::fabs(got[i] - want);
        if (!(err <= tol)) {  // also catches NaN
            if (bad < 8)
                msg << "\n  " << what << "[" << i << "] = " << got[i] << ", expected " << want
                    << " (err " << err << ", tol " << tol << ", sum|terms| " << e.abs_sum[i]
                    << ", n " << e.count[i] << ")";
            ++bad;
            worst = std::max(worst, tol > 0 ? err / tol : err);
        }
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size()
                                         << " elements out of tolerance (worst err/tol " << worst
                                         << ")" << msg.str();
}

inline Vec ones(size_t n) { return Vec(n, 1.0); }

inline Vec broadcast_bias(const Problem& p, const Vec& bias) {
    Vec r(static_cast<size_t>(naive::dst_elems(p)));
    const int64_t vol = r.size() / (p.batch * p.out_channels);
    for (size_t i = 0; i < r.size(); ++i) r[i] = bias[(i / vol) % p.out_channels];
    return r;
}

// Reference results with their tolerance data. Counts come from running the reference on
// all-ones inputs, S from running it on absolute values.
// exact_count = false uses the upper bound (in_channels/groups) * prod(kernel) (+1 for the bias)
// for n, which only loosens the tolerance a little and saves a third of the reference time on
// big problems.
inline Expected expect_forward(const Problem& p, const Vec& src, const Vec& w, const Vec& bias,
                               bool exact_count = true) {
    Expected e;
    e.value = naive::forward(p, src, w, bias);
    e.abs_sum = naive::forward(p, naive::abs_values(src), naive::abs_values(w), naive::abs_values(bias));
    if (exact_count) {
        e.count = naive::forward(p, ones(src.size()), ones(w.size()), bias.empty() ? Vec{} : ones(bias.size()));
    } else {
        double n = static_cast<double>(p.in_channels / p.groups);
        for (int d = 0; d < p.rank; ++d) n *= p.kernel[d];
        e.count.assign(e.value.size(), n + (bias.empty() ? 0 : 1));
    }
    return e;
}
inline Expected expect_backward_data(const Problem& p, const Vec& w, const Vec& dd) {
    Expected e;
    e.value = naive::backward_data(p, w, dd);
    e.abs_sum = naive::backward_data(p, naive::abs_values(w), naive::abs_values(dd));
    e.count = naive::backward_data(p, ones(w.size()), ones(dd.size()));
    return e;
}
inline Expected expect_backward_weights(const Problem& p, const Vec& src, const Vec& dd) {
    Expected e;
    e.value = naive::backward_weights(p, src, dd);
    e.abs_sum = naive::backward_weights(p, naive::abs_values(src), naive::abs_values(dd));
    e.count = naive::backward_weights(p, ones(src.size()), ones(dd.size()));
    return e;
}
inline Expected expect_backward_bias(const Problem& p, const Vec& dd) {
    Expected e;
    e.value = naive::backward_bias(p, dd);
    e.abs_sum = naive::backward_bias(p, naive::abs_values(dd));
    e.count = naive::backward_bias(p, ones(dd.size()));
    return e;
}

// Convenience for the fixed-vector tests: one forward pass through a fresh handle, inputs and
// result channels-first. Throws (gtest reports it) when the library fails.
inline Vec lib_forward(const Problem& p, const Vec& src, const Vec& w, const Vec& bias,
                       deconv_dtype dt = DECONV_F32, deconv_layout l = DECONV_CHANNELS_FIRST,
                       deconv_mode mode = DECONV_INFERENCE) {
    Handle h(p, dt, l, mode);
    if (!h.ok())
        throw std::runtime_error("deconv_create: " + std::string(deconv_status_string(h.status())) +
                                 ": " + h.error() + " for " + naive::to_string(p));
    Buffer bs = src_buffer(p, dt, l, src), bw(dt, w);
    Buffer bb(dt, bias.empty() ? Vec{} : bias);
    Buffer bd(dt, static_cast<size_t>(naive::dst_elems(p)));
    const deconv_status st = deconv_forward(h.get(), bs.data(), bw.data(),
                                            p.bias ? bb.data() : nullptr, bd.data(), DECONV_REQ_WRITE);
    if (st != DECONV_OK)
        throw std::runtime_error("deconv_forward: " + std::string(deconv_last_error()) + " for " +
                                 naive::to_string(p) + " " + h.impls());
    if (!bd.guards_intact()) throw std::runtime_error("deconv_forward wrote outside dst");
    return read_dst(p, l, bd);
}

}  // namespace harness
