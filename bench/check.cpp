// The correctness check: one small problem per pass against the naive double-precision reference
// (tests/reference/naive_deconv.hpp), so that a table is never printed for a broken build.
#include <algorithm>
#include <cmath>

#include "bench.h"
#include "naive_deconv.hpp"

namespace bench {
namespace {

// Every feature at once: groups, stride, pad, dilation, adj, bias.
naive::Problem check_problem() {
    naive::Problem p;
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 4;
    p.out_channels = 6;
    p.groups = 2;
    p.in_size = {5, 4, 1};
    p.kernel = {3, 2, 1};
    p.stride = {2, 1, 1};
    p.pad = {1, 0, 0};
    p.dilate = {1, 2, 1};
    p.adj = {1, 0, 0};
    p.bias = true;
    return p;
}

// max |got - ref| / max |ref|: relative to the output's scale, so near-zero entries (sums that
// cancel) do not blow the measure up.
double rel_error(const std::vector<double> &got, const std::vector<double> &ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size() && i < got.size(); i++) {
        num = std::max(num, std::fabs(got[i] - ref[i]));
        den = std::max(den, std::fabs(ref[i]));
    }
    return got.size() != ref.size() ? INFINITY : num / std::max(den, 1e-30);
}

}  // namespace

CheckResult check_one(Pass pass, deconv_dtype dt, deconv_layout layout) {
    CheckResult r;
    r.pass = kPassName[pass];
    r.dtype = dtype_name(dt);
    r.layout = layout_name(layout);
    // f32: accumulation-order noise only. bf16: the output is rounded to 8 significant bits.
    r.tol = dt == DECONV_F32 ? 1e-5 : 1e-2;

    const naive::Problem np = check_problem();
    Workload w;
    w.name = "check";
    w.rank = np.rank;
    w.mb = np.batch;
    w.ic = np.in_channels;
    w.oc = np.out_channels;
    w.groups = np.groups;
    for (int i = 0; i < np.rank; i++) {
        w.in[i] = np.in_size[i];
        w.k[i] = np.kernel[i];
        w.s[i] = np.stride[i];
        w.p[i] = np.pad[i];
        w.d[i] = np.dilate[i];
        w.adj[i] = np.adj[i];
    }
    const bool cl = layout == DECONV_CHANNELS_LAST;
    const auto out = naive::output_size(np);
    // Inputs exactly representable in the data type, so the reference sees what the library sees.
    auto data = [&](int64_t n, double scale, double phase) {
        std::vector<double> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; i++) {
            double x = scale * std::sin(0.37 * double(i) + phase);
            v[size_t(i)] = dt == DECONV_BF16 ? naive::bf16_round(x) : double(float(x));
        }
        return v;
    };
    const auto src = data(naive::src_elems(np), 1.0, 0.1);
    const auto wei = data(naive::weights_elems(np), 0.5, 0.7);
    const auto bias = data(np.out_channels, 0.3, 1.3);
    const auto ddst = data(naive::dst_elems(np), 1.0, 2.1);
    auto to_layout = [&](const std::vector<double> &t, int64_t c, const std::array<int64_t, 3> &sp) {
        return cl ? naive::to_channels_last(np, t, c, sp) : t;
    };
    auto from_layout = [&](const std::vector<double> &t, int64_t c, const std::array<int64_t, 3> &sp) {
        return cl ? naive::to_channels_first(np, t, c, sp) : t;
    };
    auto buffer = [&](const std::vector<double> &v) {
        Buffer b(dt, int64_t(v.size()));
        b.set(std::vector<float>(v.begin(), v.end()));
        return b;
    };
    Buffer b_src = buffer(to_layout(src, np.in_channels, np.in_size)), b_wei = buffer(wei), b_bias = buffer(bias),
           b_ddst = buffer(to_layout(ddst, np.out_channels, out));

    deconv_params prm = make_params(w, dt, layout, pass == FWD ? DECONV_INFERENCE : DECONV_TRAINING);
    Handle h;
    deconv_status s = deconv_create(&prm, &h.h);
    if (s != DECONV_OK) {
        r.error = lib_error(s, "deconv_create");
    } else if (pass == FWD) {
        Buffer dst(dt, naive::dst_elems(np));
        if ((s = deconv_set_weights(h.h, b_wei.data(), b_bias.data())) != DECONV_OK)
            r.error = lib_error(s, "deconv_set_weights");
        else if ((s = deconv_forward(h.h, b_src.data(), nullptr, nullptr, dst.data(), DECONV_REQ_WRITE)) != DECONV_OK)
            r.error = lib_error(s, "deconv_forward");
        else
            r.rel_err =
                rel_error(from_layout(dst.to_double(), np.out_channels, out), naive::forward(np, src, wei, bias));
    } else if (pass == BWD_DATA) {
        Buffer dsrc(dt, naive::src_elems(np));
        if ((s = deconv_backward(h.h, nullptr, b_wei.data(), b_ddst.data(), dsrc.data(), DECONV_REQ_WRITE, nullptr,
                                 DECONV_REQ_NULL, nullptr, DECONV_REQ_NULL)) != DECONV_OK)
            r.error = lib_error(s, "deconv_backward");
        else
            r.rel_err = rel_error(from_layout(dsrc.to_double(), np.in_channels, np.in_size),
                                  naive::backward_data(np, wei, ddst));
    } else {
        Buffer dw(dt, naive::weights_elems(np)), db(dt, np.out_channels);
        if ((s = deconv_backward(h.h, b_src.data(), nullptr, b_ddst.data(), nullptr, DECONV_REQ_NULL, dw.data(),
                                 DECONV_REQ_WRITE, db.data(), DECONV_REQ_WRITE)) != DECONV_OK)
            r.error = lib_error(s, "deconv_backward");
        else
            r.rel_err = std::max(rel_error(dw.to_double(), naive::backward_weights(np, src, ddst)),
                                 rel_error(db.to_double(), naive::backward_bias(np, ddst)));
    }
    r.ok = r.error.empty() && r.rel_err <= r.tol;
    return r;
}

}  // namespace bench
