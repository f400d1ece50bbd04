// Workloads (the bench/shapes.tsv format), their buffers, and the library calls that are timed.
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "bench.h"

namespace bench {

const char *const kPassName[3] = {"fwd", "bwd_data", "bwd_weights"};

double Workload::flops() const {
    double f = 2.0 * double(mb) * double(ic) * double(oc / groups);
    for (int i = 0; i < rank; i++) f *= double(k[i]) * double(in[i]);
    return f;
}

namespace {

// 'x'-joined spatial field ("4x4", "32", "2x2x2"); returns the number of values or -1.
int parse_dims(const std::string &f, int64_t *v) {
    int n = 0;
    std::stringstream ss(f);
    std::string part;
    while (std::getline(ss, part, 'x')) {
        if (n == 3 || part.empty()) return -1;
        char *end = nullptr;
        long long x = std::strtoll(part.c_str(), &end, 10);
        if (*end) return -1;
        v[n++] = x;
    }
    return n;
}

}  // namespace

// name mb ic oc groups in kernel stride pad dilate adj, tab-separated, '#' comments.
bool parse_workloads(const std::string &text, const std::string &origin, std::vector<Workload> &out,
                     std::string &err) {
    std::stringstream ss(text);
    std::string line;
    int lineno = 0;
    while (std::getline(ss, line)) {
        lineno++;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::stringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, '\t')) f.push_back(cell);
        const std::string where = origin + ":" + std::to_string(lineno);
        if (f.size() < 11) {
            err = where + ": expected 11 tab-separated fields, got " + std::to_string(f.size());
            return false;
        }
        Workload w;
        w.name = f[0];
        w.mb = std::atoll(f[1].c_str());
        w.ic = std::atoll(f[2].c_str());
        w.oc = std::atoll(f[3].c_str());
        w.groups = std::atoll(f[4].c_str());
        int64_t *fields[6] = {w.in, w.k, w.s, w.p, w.d, w.adj};
        w.rank = parse_dims(f[5], w.in);
        bool ok = w.rank >= 1 && w.rank <= 3;
        for (int i = 1; i < 6 && ok; i++) ok = parse_dims(f[5 + i], fields[i]) == w.rank;
        if (!ok) {
            err = where + ": spatial fields of '" + w.name + "' are malformed or disagree in rank";
            return false;
        }
        out.push_back(w);
    }
    if (out.empty()) {
        err = origin + ": no workloads";
        return false;
    }
    return true;
}

// ---- buffers ------------------------------------------------------------------------------------

Buffer::Buffer(deconv_dtype t, int64_t n) : dt(t) {
    if (t == DECONV_F32) f.assign(size_t(n), 0.f);
    else h.assign(size_t(n), 0);
}

void Buffer::set(const std::vector<float> &v) {
    if (dt == DECONV_F32) f = v;
    else deconv_f32_to_bf16(v.data(), h.data(), v.size());
}

std::vector<double> Buffer::to_double() const {
    std::vector<float> tmp(size());
    if (dt == DECONV_F32) tmp = f;
    else deconv_bf16_to_f32(h.data(), tmp.data(), h.size());
    return std::vector<double>(tmp.begin(), tmp.end());
}

namespace {

std::vector<float> gen(int64_t n, const std::function<double(int64_t)> &f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[size_t(i)] = float(f(i));
    return v;
}

}  // namespace

Buffers make_buffers(const Workload &w, deconv_dtype dt) {
    int64_t src = w.mb * w.ic, dst = w.mb * w.oc, wei = w.ic * (w.oc / w.groups), kvol = 1;
    for (int i = 0; i < w.rank; i++) {
        src *= w.in[i];
        dst *= w.out(i);
        kvol *= w.k[i];
    }
    wei *= kvol;
    Buffers b;
    b.src = Buffer(dt, src);
    b.wei = Buffer(dt, wei);
    b.bias = Buffer(dt, w.oc);
    b.dst = Buffer(dt, dst);
    b.diff_dst = Buffer(dt, dst);
    b.diff_src = Buffer(dt, src);
    b.diff_wei = Buffer(dt, wei);
    b.diff_bias = Buffer(dt, w.oc);
    const double fan = double(w.ic / w.groups) * double(kvol);
    b.src.set(gen(src, [](int64_t i) { return std::sin(0.1 * double(i)); }));
    b.wei.set(gen(wei, [&](int64_t j) { return std::cos(0.05 * double(j)) / std::sqrt(fan); }));
    b.bias_f32 = gen(w.oc, [](int64_t k) { return 0.01 * double(k); });
    b.bias.set(b.bias_f32);
    b.diff_dst.set(gen(dst, [](int64_t i) { return std::sin(0.07 * double(i) + 0.3); }));
    b.diff_bias_f32.assign(size_t(w.oc), 0.f);
    return b;
}

deconv_params make_params(const Workload &w, deconv_dtype dt, deconv_layout layout, deconv_mode mode, bool bias) {
    deconv_params p;
    deconv_params_init(&p);
    p.rank = w.rank;
    p.batch = w.mb;
    p.in_channels = w.ic;
    p.out_channels = w.oc;
    p.groups = w.groups;
    for (int i = 0; i < w.rank; i++) {
        p.in_size[i] = w.in[i];
        p.kernel[i] = w.k[i];
        p.stride[i] = w.s[i];
        p.pad[i] = w.p[i];
        p.dilate[i] = w.d[i];
        p.adj[i] = w.adj[i];
    }
    p.no_bias = bias ? 0 : 1;
    p.dtype = dt;
    p.layout = layout;
    p.mode = mode;
    return p;
}

std::string lib_error(deconv_status s, const char *call) {
    return std::string(call) + ": " + deconv_status_string(s) + " (" + deconv_last_error() + ")";
}

Call lib_call(Pass pass, deconv *h, Buffers &b, deconv_req req, bool bias) {
    if (pass == FWD)
        return [h, &b, req] {
            deconv_status s = deconv_forward(h, b.src.data(), nullptr, nullptr, b.dst.data(), req);
            return s == DECONV_OK ? std::string() : lib_error(s, "deconv_forward");
        };
    if (pass == BWD_DATA)
        return [h, &b, req] {
            deconv_status s = deconv_backward(h, nullptr, b.wei.data(), b.diff_dst.data(), b.diff_src.data(), req,
                                              nullptr, DECONV_REQ_NULL, nullptr, DECONV_REQ_NULL);
            return s == DECONV_OK ? std::string() : lib_error(s, "deconv_backward");
        };
    return [h, &b, req, bias] {
        deconv_status s = deconv_backward(h, b.src.data(), nullptr, b.diff_dst.data(), nullptr, DECONV_REQ_NULL,
                                          b.diff_wei.data(), req, bias ? b.diff_bias.data() : nullptr,
                                          bias ? req : DECONV_REQ_NULL);
        return s == DECONV_OK ? std::string() : lib_error(s, "deconv_backward");
    };
}

void setup(Case &c, const Workload &w, deconv_dtype dt, deconv_layout layout, bool need_inf, bool need_train,
           bool bias) {
    c.w = &w;
    c.dt = dt;
    c.layout = layout;
    deconv_params inf = make_params(w, dt, layout, DECONV_INFERENCE, bias);
    deconv_params train = make_params(w, dt, layout, DECONV_TRAINING, bias);
    deconv_sizes sz;
    deconv_status s = deconv_buffer_sizes(&inf, &sz);
    if (s != DECONV_OK) {
        c.skip = "ERROR " + lib_error(s, "deconv_buffer_sizes");
        c.failed = true;
        return;
    }
    c.b = make_buffers(w, dt);
    if (need_inf) {
        if ((s = deconv_create(&inf, &c.inf.h)) != DECONV_OK) c.inf_err = lib_error(s, "deconv_create(inference)");
        else if ((s = deconv_set_weights(c.inf.h, c.b.wei.data(), bias ? c.b.bias.data() : nullptr)) != DECONV_OK)
            c.inf_err = lib_error(s, "deconv_set_weights");
    }
    if (need_train && (s = deconv_create(&train, &c.train.h)) != DECONV_OK)
        c.train_err = lib_error(s, "deconv_create(training)");
}

}  // namespace bench
