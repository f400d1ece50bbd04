// deconv-bench: times libdeconv on the standard deconvolution workloads.
//
// For every workload, layout, data type and pass (forward, backward data, backward weights+bias)
// it reports the median time, the min/max spread, GFLOP/s, the oneDNN implementation the library
// chose, and the time of a plain oneDNN primitive doing the same job in the same process on the
// same buffers (as shared/peers/onednn_raw.cpp "onednn_plain" does), so the library's overhead
// is visible as a ratio. Before the table it checks one small problem per pass against the
// naive double-precision reference (tests/reference/naive_deconv.hpp).
//
// What is timed per pass (handles and primitives are created outside the timing):
//   fwd          inference handle, deconv_set_weights() once, deconv_forward(weights = NULL)
//   bwd_data     training handle, deconv_backward() with only req_src = WRITE
//   bwd_weights  training handle, deconv_backward() with req_weights = req_bias = WRITE
//   oneDNN       the user's plain buffers reordered to and from the primitive's chosen layouts
//                inside the timing (forward weights prepacked once, outside it); f32 bias and
//                diff_bias for bf16, as in the peers.
// Timing: one warm-up call (two when it takes < 50 ms), then calls until the budget (default
// 0.3 s) is used, at least 5 and at most 100; or exactly --repeat N calls.
// flops = 2*mb*ic*(oc/groups)*prod(kernel)*prod(in) for every pass.
//
// Threads: --threads N calls omp_set_num_threads(N) before the first library call (all work
// runs on the main thread, so that sets the OpenMP team size oneDNN uses). Without it the
// OpenMP default applies: OMP_NUM_THREADS from the environment, else one thread per core.
//
// Exit status: 0 all good; 1 a correctness check failed or a library call failed; 2 bad usage.
#include <deconv.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "default_shapes.h"
#include "naive_deconv.hpp"

namespace {

// ---- workloads --------------------------------------------------------------------------------

struct Workload {
    std::string name;
    int64_t mb = 1, ic = 1, oc = 1, groups = 1;
    int rank = 0;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0},
            d[3] = {1, 1, 1}, adj[3] = {0, 0, 0};

    double flops() const {
        double f = 2.0 * mb * ic * double(oc / groups);
        for (int i = 0; i < rank; i++) f *= double(k[i]) * double(in[i]);
        return f;
    }
    int64_t out(int i) const { return s[i] * (in[i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * p[i] + adj[i]; }
};

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

// The shapes.tsv format: name mb ic oc groups in kernel stride pad dilate adj, tab-separated,
// '#' comments. Returns false with a message on the first malformed line.
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
        std::string where = origin + ":" + std::to_string(lineno);
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

// ---- options ----------------------------------------------------------------------------------

enum Pass { FWD = 0, BWD_DATA = 1, BWD_WEIGHTS = 2 };
const char *kPassName[] = {"fwd", "bwd_data", "bwd_weights"};

struct Options {
    std::string workloads_file;  // empty: the embedded bench/shapes.tsv
    std::string filter;
    std::vector<Pass> passes{FWD, BWD_DATA, BWD_WEIGHTS};
    std::vector<deconv_dtype> dtypes{DECONV_F32, DECONV_BF16};
    std::vector<deconv_layout> layouts{DECONV_CHANNELS_FIRST};
    int threads = 0;  // 0: OpenMP default
    int repeat = 0;   // 0: time budget
    double budget = 0.3;
    bool onednn = true, check = true, table = true, csv = false;
};

void usage(FILE *f) {
    std::fprintf(f,
        "usage: deconv-bench [options]\n"
        "  --workloads FILE   workloads TSV (format of bench/shapes.tsv; default: the embedded copy)\n"
        "  --filter STR       only workloads whose name contains STR\n"
        "  --pass P           fwd | bwd_data | bwd_weights | all (default all)\n"
        "  --dtype D          f32 | bf16 | all (default all; bf16 only where supported)\n"
        "  --layout L         ncx (channels-first) | nxc (channels-last) | all (default ncx)\n"
        "  --threads N        OpenMP threads (omp_set_num_threads; default: OMP_NUM_THREADS or all cores)\n"
        "  --repeat N         exactly N timed calls per row instead of the time budget\n"
        "  --budget SEC       time budget per row (default 0.3 s; at least 5, at most 100 calls)\n"
        "  --no-onednn        skip the plain oneDNN baseline column\n"
        "  --no-check         skip the correctness check\n"
        "  --check-only       run only the correctness check\n"
        "  --csv              CSV on stdout instead of the table\n"
        "  --help\n");
}

bool parse_args(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&](const char *what) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "deconv-bench: %s needs a value\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        auto positive = [&](const std::string &v, const char *what) {
            char *end = nullptr;
            long x = std::strtol(v.c_str(), &end, 10);
            if (*end || x < 1) {
                std::fprintf(stderr, "deconv-bench: %s must be a positive integer, got '%s'\n", what, v.c_str());
                std::exit(2);
            }
            return int(x);
        };
        if (a == "--workloads") {
            o.workloads_file = value("--workloads");
        } else if (a == "--filter") {
            o.filter = value("--filter");
        } else if (a == "--pass") {
            std::string v = value("--pass");
            if (v == "all") o.passes = {FWD, BWD_DATA, BWD_WEIGHTS};
            else if (v == "fwd") o.passes = {FWD};
            else if (v == "bwd_data") o.passes = {BWD_DATA};
            else if (v == "bwd_weights") o.passes = {BWD_WEIGHTS};
            else { std::fprintf(stderr, "deconv-bench: unknown --pass '%s'\n", v.c_str()); return false; }
        } else if (a == "--dtype") {
            std::string v = value("--dtype");
            if (v == "all") o.dtypes = {DECONV_F32, DECONV_BF16};
            else if (v == "f32") o.dtypes = {DECONV_F32};
            else if (v == "bf16") o.dtypes = {DECONV_BF16};
            else { std::fprintf(stderr, "deconv-bench: unknown --dtype '%s'\n", v.c_str()); return false; }
        } else if (a == "--layout") {
            std::string v = value("--layout");
            if (v == "all") o.layouts = {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST};
            else if (v == "ncx") o.layouts = {DECONV_CHANNELS_FIRST};
            else if (v == "nxc") o.layouts = {DECONV_CHANNELS_LAST};
            else { std::fprintf(stderr, "deconv-bench: unknown --layout '%s'\n", v.c_str()); return false; }
        } else if (a == "--threads") {
            o.threads = positive(value("--threads"), "--threads");
        } else if (a == "--repeat") {
            o.repeat = positive(value("--repeat"), "--repeat");
        } else if (a == "--budget") {
            std::string v = value("--budget");
            char *end = nullptr;
            o.budget = std::strtod(v.c_str(), &end);
            if (*end || !(o.budget >= 0)) {
                std::fprintf(stderr, "deconv-bench: bad --budget '%s'\n", v.c_str());
                return false;
            }
        } else if (a == "--no-onednn") {
            o.onednn = false;
        } else if (a == "--no-check") {
            o.check = false;
        } else if (a == "--check-only") {
            o.table = false;
        } else if (a == "--csv") {
            o.csv = true;
        } else if (a == "--help" || a == "-h") {
            usage(stdout);
            std::exit(0);
        } else {
            std::fprintf(stderr, "deconv-bench: unknown argument '%s'\n", a.c_str());
            return false;
        }
    }
    return true;
}

const char *dtype_name(deconv_dtype t) { return t == DECONV_F32 ? "f32" : "bf16"; }
const char *layout_name(deconv_layout l) { return l == DECONV_CHANNELS_FIRST ? "ncx" : "nxc"; }

// ---- buffers ----------------------------------------------------------------------------------

// A dense buffer of n elements in the handle's data type (bf16 as raw words).
struct Buffer {
    deconv_dtype dt = DECONV_F32;
    std::vector<float> f;
    std::vector<uint16_t> h;

    Buffer() = default;
    Buffer(deconv_dtype t, int64_t n) : dt(t) {
        if (t == DECONV_F32) f.assign(size_t(n), 0.f);
        else h.assign(size_t(n), 0);
    }
    void *data() { return dt == DECONV_F32 ? (void *)f.data() : (void *)h.data(); }
    size_t size() const { return dt == DECONV_F32 ? f.size() : h.size(); }
    void set(const std::vector<float> &v) {
        if (dt == DECONV_F32) f = v;
        else deconv_f32_to_bf16(v.data(), h.data(), v.size());
    }
    std::vector<double> to_double() const {
        std::vector<float> tmp(size());
        if (dt == DECONV_F32) tmp = f;
        else deconv_bf16_to_f32(h.data(), tmp.data(), h.size());
        return std::vector<double>(tmp.begin(), tmp.end());
    }
};

// The peers' deterministic data (shared/peers/common/shapes.h), in buffer order.
std::vector<float> gen(int64_t n, const std::function<double(int64_t)> &f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[size_t(i)] = float(f(i));
    return v;
}

deconv_params make_params(const Workload &w, deconv_dtype dt, deconv_layout layout, deconv_mode mode) {
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
    p.no_bias = 0;
    p.dtype = dt;
    p.layout = layout;
    p.mode = mode;
    return p;
}

std::string lib_error(deconv_status s, const char *call) {
    return std::string(call) + ": " + deconv_status_string(s) + " (" + deconv_last_error() + ")";
}

// ---- timing -----------------------------------------------------------------------------------

struct Timing {
    bool ok = false;
    std::string error;
    double median = 0, min = 0, max = 0;  // ms
    int reps = 0;
};

double seconds(const std::function<void()> &f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times several callables (each returns "" or an error message) in alternation, so that all
// series see the same machine noise and their ratio stays meaningful on a busy machine. A
// series stops at its first error; the others go on.
std::vector<Timing> measure(const std::vector<std::function<std::string()>> &calls, const Options &o) {
    const size_t n = calls.size();
    std::vector<Timing> t(n);
    std::vector<std::vector<double>> v(n);
    std::vector<double> spent(n, 0);
    std::vector<bool> live(n, true);
    auto run = [&](size_t i) {
        std::string err;
        double s = seconds([&] { err = calls[i](); });
        if (!err.empty()) {
            t[i].error = err;
            live[i] = false;
        }
        return s;
    };
    for (size_t i = 0; i < n; i++)  // warm-up: once, twice when fast
        if (run(i) < 0.05 && live[i]) run(i);
    auto done = [&](size_t i) {
        const int r = int(v[i].size());
        return !live[i] || (o.repeat ? r >= o.repeat : r >= 100 || (r >= 5 && spent[i] >= o.budget));
    };
    while (true) {
        bool any = false;
        for (size_t i = 0; i < n; i++) {
            if (done(i)) continue;
            any = true;
            double s = run(i);
            if (!live[i]) continue;
            v[i].push_back(s * 1e3);
            spent[i] += s;
        }
        if (!any) break;
    }
    for (size_t i = 0; i < n; i++) {
        if (!live[i] || v[i].empty()) continue;
        std::vector<double> &x = v[i];
        std::sort(x.begin(), x.end());
        const size_t m = x.size();
        t[i].median = m % 2 ? x[m / 2] : 0.5 * (x[m / 2 - 1] + x[m / 2]);
        t[i].min = x.front();
        t[i].max = x.back();
        t[i].reps = int(m);
        t[i].ok = true;
    }
    return t;
}

// ---- the plain oneDNN baseline ------------------------------------------------------------------

using dnnl::memory;
using tag = memory::format_tag;

struct OneDnn {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
};
OneDnn &onednn() {
    static OneDnn o;
    return o;
}

// A reorder between a user buffer and the primitive's layout, or nothing when they agree.
struct Staged {
    memory user, inner;
    dnnl::reorder r;
    bool needed = false;
    void to(const memory &u, const memory::desc &md) {  // user -> primitive
        user = u;
        needed = !(u.get_desc() == md);
        inner = needed ? memory(md, onednn().eng) : u;
        if (needed) r = dnnl::reorder(user, inner);
    }
    void from(const memory::desc &md, const memory &u) {  // primitive -> user
        user = u;
        needed = !(u.get_desc() == md);
        inner = needed ? memory(md, onednn().eng) : u;
        if (needed) r = dnnl::reorder(inner, user);
    }
    void run_to() {
        if (needed) r.execute(onednn().strm, user, inner);
    }
    void run_from() {
        if (needed) r.execute(onednn().strm, inner, user);
    }
};

struct Baseline {
    memory::dims src, wei, bias, dst, strides, dil, pad_l, pad_r;
    tag data_tag, wei_tag;
    memory::data_type dt;

    Baseline(const Workload &w, deconv_dtype t, deconv_layout layout) {
        bool g = w.groups > 1;
        src = {w.mb, w.ic};
        dst = {w.mb, w.oc};
        wei = g ? memory::dims{w.groups, w.oc / w.groups, w.ic / w.groups} : memory::dims{w.oc, w.ic};
        bias = {w.oc};
        for (int i = 0; i < w.rank; i++) {
            src.push_back(w.in[i]);
            dst.push_back(w.out(i));
            wei.push_back(w.k[i]);
            strides.push_back(w.s[i]);
            dil.push_back(w.d[i] - 1);
            pad_l.push_back(w.p[i]);
            pad_r.push_back(w.p[i] - w.adj[i]);
        }
        const bool cl = layout == DECONV_CHANNELS_LAST;
        const tag cf_tags[] = {tag::abc, tag::abcd, tag::abcde}, cl_tags[] = {tag::acb, tag::acdb, tag::acdeb};
        data_tag = (cl ? cl_tags : cf_tags)[w.rank - 1];
        // MXNet weights (ic, oc/g, k...) on oneDNN's logical ([g,] oc/g, ic/g, k...) dims.
        const tag w_tags[] = {tag::bac, tag::bacd, tag::bacde}, wg_tags[] = {tag::acbd, tag::acbde, tag::acbdef};
        wei_tag = (g ? wg_tags : w_tags)[w.rank - 1];
        dt = t == DECONV_F32 ? memory::data_type::f32 : memory::data_type::bf16;
    }
    memory::desc any(const memory::dims &d, memory::data_type t) const { return {d, t, tag::any}; }
    memory user(const memory::dims &d, tag t, void *ptr, memory::data_type type) const {
        return memory({d, type, t}, onednn().eng, ptr);
    }
    dnnl::deconvolution_forward::primitive_desc fwd_pd(dnnl::prop_kind pk) const {
        dnnl::deconvolution_forward::desc d(pk, dnnl::algorithm::deconvolution_direct, any(src, dt), any(wei, dt),
                                            memory::desc(bias, memory::data_type::f32, tag::a), any(dst, dt),
                                            strides, dil, pad_l, pad_r);
        return {d, onednn().eng};
    }
};

// Buffers of one workload/dtype/layout, shared by the library and the baseline.
struct Buffers {
    Buffer src, wei, bias, dst, diff_dst, diff_src, diff_wei, diff_bias;
    std::vector<float> bias_f32, diff_bias_f32, diff_wei_f32;  // the baseline's f32 bias (and fallback)
};

// A timed baseline row: the callable does every per-call reorder plus the primitive.
struct BaselineRow {
    std::function<void()> call;
    std::string impl;
    std::vector<std::shared_ptr<void>> keep;  // primitives and memories the callable uses
};

BaselineRow baseline_row(Pass pass, const Baseline &B, Buffers &b) {
    using namespace dnnl;
    auto &E = onednn();
    BaselineRow row;
    if (pass == FWD) {
        auto pd = B.fwd_pd(prop_kind::forward_inference);
        auto prim = std::make_shared<deconvolution_forward>(pd);
        auto st = std::make_shared<std::vector<Staged>>(2);
        (*st)[0].to(B.user(B.src, B.data_tag, b.src.data(), B.dt), pd.src_desc());
        (*st)[1].from(pd.dst_desc(), B.user(B.dst, B.data_tag, b.dst.data(), B.dt));
        // Weights are packed once, as deconv_set_weights does.
        auto wk = std::make_shared<memory>(pd.weights_desc(), E.eng);
        memory wu = B.user(B.wei, B.wei_tag, b.wei.data(), B.dt);
        reorder(wu, *wk).execute(E.strm, wu, *wk);
        E.strm.wait();
        auto bias = std::make_shared<memory>(B.user(B.bias, tag::a, b.bias_f32.data(), memory::data_type::f32));
        row.call = [=, &E] {
            (*st)[0].run_to();
            prim->execute(E.strm, {{DNNL_ARG_SRC, (*st)[0].inner}, {DNNL_ARG_WEIGHTS, *wk},
                                   {DNNL_ARG_BIAS, *bias}, {DNNL_ARG_DST, (*st)[1].inner}});
            (*st)[1].run_from();
            E.strm.wait();
        };
        row.impl = pd.impl_info_str();
        row.keep = {prim, st, wk, bias};
    } else if (pass == BWD_DATA) {
        auto fpd = B.fwd_pd(prop_kind::forward_training);
        deconvolution_backward_data::desc d(algorithm::deconvolution_direct, B.any(B.src, B.dt),
                                            B.any(B.wei, B.dt), B.any(B.dst, B.dt), B.strides, B.dil, B.pad_l,
                                            B.pad_r);
        deconvolution_backward_data::primitive_desc pd(d, E.eng, fpd);
        auto prim = std::make_shared<deconvolution_backward_data>(pd);
        auto st = std::make_shared<std::vector<Staged>>(3);
        (*st)[0].to(B.user(B.dst, B.data_tag, b.diff_dst.data(), B.dt), pd.diff_dst_desc());
        (*st)[1].to(B.user(B.wei, B.wei_tag, b.wei.data(), B.dt), pd.weights_desc());  // weights change per step
        (*st)[2].from(pd.diff_src_desc(), B.user(B.src, B.data_tag, b.diff_src.data(), B.dt));
        row.call = [=, &E] {
            (*st)[0].run_to();
            (*st)[1].run_to();
            prim->execute(E.strm, {{DNNL_ARG_DIFF_DST, (*st)[0].inner}, {DNNL_ARG_WEIGHTS, (*st)[1].inner},
                                   {DNNL_ARG_DIFF_SRC, (*st)[2].inner}});
            (*st)[2].run_from();
            E.strm.wait();
        };
        row.impl = pd.impl_info_str();
        row.keep = {prim, st};
    } else {
        auto fpd = B.fwd_pd(prop_kind::forward_training);
        memory::desc bias_md(B.bias, memory::data_type::f32, tag::a);
        auto make = [&](memory::data_type dwt) {
            deconvolution_backward_weights::desc d(algorithm::deconvolution_direct, B.any(B.src, B.dt),
                                                   B.any(B.wei, dwt), bias_md, B.any(B.dst, B.dt), B.strides,
                                                   B.dil, B.pad_l, B.pad_r);
            return deconvolution_backward_weights::primitive_desc(d, E.eng, fpd);
        };
        // bf16 diff_weights for bf16, like the library; f32 if oneDNN rejects it.
        memory::data_type dwt = B.dt;
        deconvolution_backward_weights::primitive_desc pd;
        try {
            pd = make(dwt);
        } catch (const dnnl::error &) {
            if (dwt == memory::data_type::f32) throw;
            dwt = memory::data_type::f32;
            pd = make(dwt);
        }
        void *dw_ptr = b.diff_wei.data();
        if (dwt != B.dt) {
            b.diff_wei_f32.assign(b.diff_wei.size(), 0.f);
            dw_ptr = b.diff_wei_f32.data();
        }
        auto prim = std::make_shared<deconvolution_backward_weights>(pd);
        auto st = std::make_shared<std::vector<Staged>>(3);
        (*st)[0].to(B.user(B.src, B.data_tag, b.src.data(), B.dt), pd.src_desc());
        (*st)[1].to(B.user(B.dst, B.data_tag, b.diff_dst.data(), B.dt), pd.diff_dst_desc());
        (*st)[2].from(pd.diff_weights_desc(), B.user(B.wei, B.wei_tag, dw_ptr, dwt));
        auto db = std::make_shared<memory>(bias_md, E.eng, b.diff_bias_f32.data());
        row.call = [=, &E] {
            (*st)[0].run_to();
            (*st)[1].run_to();
            prim->execute(E.strm, {{DNNL_ARG_SRC, (*st)[0].inner}, {DNNL_ARG_DIFF_DST, (*st)[1].inner},
                                   {DNNL_ARG_DIFF_WEIGHTS, (*st)[2].inner}, {DNNL_ARG_DIFF_BIAS, *db}});
            (*st)[2].run_from();
            E.strm.wait();
        };
        row.impl = pd.impl_info_str();
        row.keep = {prim, st, db};
    }
    return row;
}

// ---- output -----------------------------------------------------------------------------------

struct Row {
    Row(std::string pr, std::string l, std::string pa, std::string d)
        : problem(std::move(pr)), layout(std::move(l)), pass(std::move(pa)), dtype(std::move(d)) {}
    std::string problem, layout, pass, dtype;
    Timing lib, dnn;
    double gflops = 0;
    std::string impl, dnn_impl, note;
};

struct Printer {
    const Options &o;
    size_t name_w;

    static std::string fmt(const char *f, double v) {
        char b[64];
        std::snprintf(b, sizeof b, f, v);
        return b;
    }
    static std::string ms(double v) { return fmt(v < 10 ? "%.4f" : v < 100 ? "%.3f" : "%.2f", v); }
    // "-3%/+12%": min and max relative to the median (a single outlier beyond +999% is capped
    // so the column stays aligned).
    static std::string spread(const Timing &t) {
        char b[64];
        const double lo = 100 * (1 - t.min / t.median), hi = 100 * (t.max / t.median - 1);
        if (hi > 999) std::snprintf(b, sizeof b, "-%.0f%%/>999%%", lo);
        else std::snprintf(b, sizeof b, "-%.0f%%/+%.0f%%", lo, hi);
        return b;
    }

    void header() const {
        if (o.csv) {
            std::printf("problem,layout,pass,dtype,ms,min_ms,max_ms,reps,gflops,onednn_ms,ratio,impl,onednn_impl,note\n");
            return;
        }
        std::printf("%-*s  %-6s %-11s %-5s %10s %-11s %8s", int(name_w), "problem", "layout", "pass", "dtype",
                    "ms", " spread", "GFLOP/s");
        if (o.onednn) std::printf(" %10s %6s", "oneDNN ms", "ratio");
        std::printf("  impl\n");
        size_t width = name_w + 2 + 7 + 12 + 6 + 11 + 12 + 9 + (o.onednn ? 18 : 0) + 2 + 20;
        std::printf("%s\n", std::string(width, '-').c_str());
    }

    void row(const Row &r) const {
        bool both = o.onednn && r.dnn.ok && r.lib.ok;
        if (o.csv) {
            std::printf("%s,%s,%s,%s,", r.problem.c_str(), r.layout.c_str(), r.pass.c_str(), r.dtype.c_str());
            if (r.lib.ok)
                std::printf("%.5f,%.5f,%.5f,%d,%.3f,", r.lib.median, r.lib.min, r.lib.max, r.lib.reps, r.gflops);
            else
                std::printf(",,,,,");
            if (r.dnn.ok) std::printf("%.5f,", r.dnn.median);
            else std::printf(",");
            if (both) std::printf("%.4f,", r.lib.median / r.dnn.median);
            else std::printf(",");
            std::string note = r.note.empty() ? (r.lib.ok ? r.dnn.error : r.lib.error) : r.note;
            std::replace(note.begin(), note.end(), ',', ';');
            std::printf("%s,%s,%s\n", r.impl.c_str(), r.dnn_impl.c_str(), note.c_str());
            std::fflush(stdout);
            return;
        }
        std::printf("%-*s  %-6s %-11s %-5s ", int(name_w), r.problem.c_str(), r.layout.c_str(), r.pass.c_str(),
                    r.dtype.c_str());
        if (!r.note.empty()) {
            std::printf("%s\n", r.note.c_str());
        } else if (!r.lib.ok) {
            std::printf("ERROR %s\n", r.lib.error.c_str());
        } else {
            std::printf("%10s %-11s %8.1f", ms(r.lib.median).c_str(), spread(r.lib).c_str(), r.gflops);
            if (o.onednn) {
                if (r.dnn.ok) std::printf(" %10s %5.2fx", ms(r.dnn.median).c_str(), r.lib.median / r.dnn.median);
                else std::printf(" %10s %6s", "n/a", "");
            }
            std::printf("  %s", r.impl.c_str());
            if (o.onednn && r.dnn.ok && r.dnn_impl != r.impl) std::printf(" (oneDNN: %s)", r.dnn_impl.c_str());
            if (o.onednn && !r.dnn.ok && !r.dnn.error.empty()) std::printf(" (oneDNN failed: %s)", r.dnn.error.c_str());
            std::printf("\n");
        }
        std::fflush(stdout);
    }
};

// ---- one workload -----------------------------------------------------------------------------

Buffers make_buffers(const Workload &w, deconv_dtype dt, const deconv_sizes &sz) {
    Buffers b;
    b.src = Buffer(dt, sz.src);
    b.wei = Buffer(dt, sz.weights);
    b.bias = Buffer(dt, sz.bias);
    b.dst = Buffer(dt, sz.dst);
    b.diff_dst = Buffer(dt, sz.dst);
    b.diff_src = Buffer(dt, sz.src);
    b.diff_wei = Buffer(dt, sz.weights);
    b.diff_bias = Buffer(dt, sz.bias);
    const double fan = double(w.ic / w.groups) * double(sz.weights / (w.ic * (w.oc / w.groups)));
    b.src.set(gen(sz.src, [](int64_t i) { return std::sin(0.1 * double(i)); }));
    b.wei.set(gen(sz.weights, [&](int64_t j) { return std::cos(0.05 * double(j)) / std::sqrt(fan); }));
    b.bias_f32 = gen(sz.bias, [](int64_t k) { return 0.01 * double(k); });
    b.bias.set(b.bias_f32);
    b.diff_dst.set(gen(sz.dst, [](int64_t i) { return std::sin(0.07 * double(i) + 0.3); }));
    b.diff_bias_f32.assign(size_t(sz.bias), 0.f);
    return b;
}

struct Handle {
    deconv *h = nullptr;
    ~Handle() { deconv_destroy(h); }
};

// Times every selected pass of one workload/layout/dtype; returns the number of failed rows.
int bench_workload(const Workload &w, deconv_layout layout, deconv_dtype dt, const Options &o, const Printer &pr) {
    int failures = 0;
    auto emit_all = [&](const std::string &note, bool failed) {
        for (Pass p : o.passes) {
            Row r(w.name, layout_name(layout), kPassName[p], dtype_name(dt));
            r.note = note;
            pr.row(r);
            failures += failed;
        }
    };
    if (dt == DECONV_BF16 && !deconv_bf16_supported()) {
        emit_all("skipped: bf16 not supported on this CPU", false);
        return 0;
    }
    deconv_params inf = make_params(w, dt, layout, DECONV_INFERENCE);
    deconv_params train = make_params(w, dt, layout, DECONV_TRAINING);
    deconv_sizes sz;
    deconv_status s = deconv_buffer_sizes(&inf, &sz);
    if (s != DECONV_OK) {
        emit_all("ERROR " + lib_error(s, "deconv_buffer_sizes"), true);
        return failures;
    }
    Buffers b = make_buffers(w, dt, sz);
    Baseline B(w, dt, layout);
    Handle hi, ht;
    std::string inf_err, train_err;
    bool need_inf = false, need_train = false;
    for (Pass p : o.passes) (p == FWD ? need_inf : need_train) = true;
    if (need_inf) {
        if ((s = deconv_create(&inf, &hi.h)) != DECONV_OK) inf_err = lib_error(s, "deconv_create(inference)");
        else if ((s = deconv_set_weights(hi.h, b.wei.data(), b.bias.data())) != DECONV_OK)
            inf_err = lib_error(s, "deconv_set_weights");
    }
    if (need_train && (s = deconv_create(&train, &ht.h)) != DECONV_OK)
        train_err = lib_error(s, "deconv_create(training)");

    for (Pass p : o.passes) {
        Row r(w.name, layout_name(layout), kPassName[p], dtype_name(dt));
        const std::string &create_err = p == FWD ? inf_err : train_err;
        deconv *h = p == FWD ? hi.h : ht.h;
        if (!create_err.empty()) {
            r.lib.error = create_err;
        } else {
            std::function<std::string()> call;
            if (p == FWD) {
                call = [&] {
                    deconv_status st = deconv_forward(h, b.src.data(), nullptr, nullptr, b.dst.data(), DECONV_REQ_WRITE);
                    return st == DECONV_OK ? std::string() : lib_error(st, "deconv_forward");
                };
            } else if (p == BWD_DATA) {
                call = [&] {
                    deconv_status st = deconv_backward(h, nullptr, b.wei.data(), b.diff_dst.data(), b.diff_src.data(),
                                                       DECONV_REQ_WRITE, nullptr, DECONV_REQ_NULL, nullptr,
                                                       DECONV_REQ_NULL);
                    return st == DECONV_OK ? std::string() : lib_error(st, "deconv_backward");
                };
            } else {
                call = [&] {
                    deconv_status st = deconv_backward(h, b.src.data(), nullptr, b.diff_dst.data(), nullptr,
                                                       DECONV_REQ_NULL, b.diff_wei.data(), DECONV_REQ_WRITE,
                                                       b.diff_bias.data(), DECONV_REQ_WRITE);
                    return st == DECONV_OK ? std::string() : lib_error(st, "deconv_backward");
                };
            }
            std::vector<std::function<std::string()>> calls{call};
            BaselineRow br;
            if (o.onednn) {
                try {
                    br = baseline_row(p, B, b);
                    r.dnn_impl = br.impl;
                    calls.push_back([&] {
                        br.call();
                        return std::string();
                    });
                } catch (const dnnl::error &e) {
                    r.dnn.error = e.what();
                }
            }
            std::vector<Timing> t = measure(calls, o);
            r.lib = t[0];
            if (t.size() > 1) r.dnn = t[1];
            const char *impl = deconv_impl_name(h, deconv_pass(p));
            r.impl = impl ? impl : "?";
        }
        if (!r.lib.ok) failures++;
        r.gflops = r.lib.ok ? w.flops() / (r.lib.median * 1e-3) / 1e9 : 0;
        pr.row(r);
    }
    return failures;
}

// ---- correctness check ------------------------------------------------------------------------

// One small problem with every feature at once: groups, stride, pad, dilation, adj, bias.
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
    for (size_t i = 0; i < ref.size(); i++) {
        num = std::max(num, std::fabs(got[i] - ref[i]));
        den = std::max(den, std::fabs(ref[i]));
    }
    return got.size() != ref.size() ? INFINITY : num / std::max(den, 1e-30);
}

// Runs the check of one pass/dtype/layout; prints a line; returns true on PASS.
bool check_one(Pass pass, deconv_dtype dt, deconv_layout layout) {
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

    std::string err;
    double e = 0;
    deconv_params prm = make_params(w, dt, layout, pass == FWD ? DECONV_INFERENCE : DECONV_TRAINING);
    Handle h;
    deconv_status s = deconv_create(&prm, &h.h);
    if (s != DECONV_OK) {
        err = lib_error(s, "deconv_create");
    } else if (pass == FWD) {
        Buffer dst(dt, naive::dst_elems(np));
        if ((s = deconv_set_weights(h.h, b_wei.data(), b_bias.data())) != DECONV_OK)
            err = lib_error(s, "deconv_set_weights");
        else if ((s = deconv_forward(h.h, b_src.data(), nullptr, nullptr, dst.data(), DECONV_REQ_WRITE)) != DECONV_OK)
            err = lib_error(s, "deconv_forward");
        else
            e = rel_error(from_layout(dst.to_double(), np.out_channels, out), naive::forward(np, src, wei, bias));
    } else if (pass == BWD_DATA) {
        Buffer dsrc(dt, naive::src_elems(np));
        if ((s = deconv_backward(h.h, nullptr, b_wei.data(), b_ddst.data(), dsrc.data(), DECONV_REQ_WRITE, nullptr,
                                 DECONV_REQ_NULL, nullptr, DECONV_REQ_NULL)) != DECONV_OK)
            err = lib_error(s, "deconv_backward");
        else
            e = rel_error(from_layout(dsrc.to_double(), np.in_channels, np.in_size),
                          naive::backward_data(np, wei, ddst));
    } else {
        Buffer dw(dt, naive::weights_elems(np)), db(dt, np.out_channels);
        if ((s = deconv_backward(h.h, b_src.data(), nullptr, b_ddst.data(), nullptr, DECONV_REQ_NULL, dw.data(),
                                 DECONV_REQ_WRITE, db.data(), DECONV_REQ_WRITE)) != DECONV_OK)
            err = lib_error(s, "deconv_backward");
        else
            e = std::max(rel_error(dw.to_double(), naive::backward_weights(np, src, ddst)),
                         rel_error(db.to_double(), naive::backward_bias(np, ddst)));
    }
    // f32: accumulation-order noise only. bf16: the output is rounded to 8 significant bits.
    const double tol = dt == DECONV_F32 ? 1e-5 : 1e-2;
    const bool pass_ok = err.empty() && e <= tol;
    std::printf("check %-11s %-4s %s  ", kPassName[pass], dtype_name(dt), layout_name(layout));
    if (!err.empty()) std::printf("ERROR %s  FAIL\n", err.c_str());
    else std::printf("max rel err %.2e (tol %.0e)  %s\n", e, tol, pass_ok ? "PASS" : "FAIL");
    return pass_ok;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            size_t c = line.find(':');
            return c == std::string::npos ? line : line.substr(c + 2);
        }
    return "unknown CPU";
}

// The 1-minute load average: timings on a machine busy with other work are not worth much
// (with OpenMP, one busy core stalls every barrier), so the table says what it was.
double load_average() {
    std::ifstream f("/proc/loadavg");
    double l = -1;
    f >> l;
    return l;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse_args(argc, argv, o)) {
        usage(stderr);
        return 2;
    }
    // Before any library call, so oneDNN's first OpenMP region already uses this team size.
    if (o.threads) omp_set_num_threads(o.threads);

    std::vector<Workload> workloads;
    std::string err;
    if (o.workloads_file.empty()) {
        if (!parse_workloads(kDefaultShapesTsv, "bench/shapes.tsv (embedded)", workloads, err)) {
            std::fprintf(stderr, "deconv-bench: %s\n", err.c_str());
            return 2;
        }
    } else {
        std::ifstream f(o.workloads_file);
        if (!f) {
            std::fprintf(stderr, "deconv-bench: cannot read %s\n", o.workloads_file.c_str());
            return 2;
        }
        std::stringstream ss;
        ss << f.rdbuf();
        if (!parse_workloads(ss.str(), o.workloads_file, workloads, err)) {
            std::fprintf(stderr, "deconv-bench: %s\n", err.c_str());
            return 2;
        }
    }
    if (!o.filter.empty()) {
        workloads.erase(std::remove_if(workloads.begin(), workloads.end(),
                                       [&](const Workload &w) { return w.name.find(o.filter) == std::string::npos; }),
                        workloads.end());
        if (workloads.empty()) {
            std::fprintf(stderr, "deconv-bench: no workload matches --filter '%s'\n", o.filter.c_str());
            return 2;
        }
    }

    const dnnl_version_t *dv = dnnl_version();
    const uint32_t v = deconv_version();
    std::printf("# libdeconv %u.%u.%u, oneDNN %d.%d.%d, %s, %d OpenMP threads, bf16 %s, load average %.2f\n",
                v / 10000, v / 100 % 100, v % 100, dv->major, dv->minor, dv->patch, cpu_model().c_str(),
                omp_get_max_threads(), deconv_bf16_supported() ? "supported" : "not supported", load_average());
    if (o.table)
        std::printf("# workloads: %s (%zu); timing: median of %s after warm-up; ratio = libdeconv / plain oneDNN\n",
                    o.workloads_file.empty() ? "embedded bench/shapes.tsv" : o.workloads_file.c_str(),
                    workloads.size(),
                    o.repeat ? (std::to_string(o.repeat) + " calls").c_str()
                             : ("calls within " + Printer::fmt("%.2g", o.budget) + " s (5..100)").c_str());
    std::fflush(stdout);

    int check_failures = 0;
    if (o.check) {
        for (deconv_layout l : o.layouts)
            for (deconv_dtype dt : o.dtypes) {
                if (dt == DECONV_BF16 && !deconv_bf16_supported()) {
                    std::printf("check bf16 %s: skipped (bf16 not supported on this CPU)\n", layout_name(l));
                    continue;
                }
                for (Pass p : o.passes) check_failures += !check_one(p, dt, l);
            }
        std::printf("check: %s\n\n", check_failures ? "FAIL" : "all PASS");
        std::fflush(stdout);
    }

    int row_failures = 0;
    if (o.table) {
        size_t name_w = 7;
        for (const Workload &w : workloads) name_w = std::max(name_w, w.name.size());
        Printer pr{o, name_w};
        pr.header();
        const auto t0 = std::chrono::steady_clock::now();
        size_t i = 0;
        for (const Workload &w : workloads) {
            i++;
            std::fprintf(stderr, "[%zu/%zu] %s (%.0f s)\n", i, workloads.size(), w.name.c_str(),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            for (deconv_layout l : o.layouts)
                for (deconv_dtype dt : o.dtypes) row_failures += bench_workload(w, l, dt, o, pr);
        }
        const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "done in %.0f s\n", total);
        if (!o.csv) std::printf("# %.0f s, load average %.2f at the end\n", total, load_average());
    }
    if (check_failures || row_failures) {
        std::fprintf(stderr, "deconv-bench: %d check(s) failed, %d row(s) failed\n", check_failures, row_failures);
        return 1;
    }
    return 0;
}
