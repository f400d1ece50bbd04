// deconv-bench: times libdeconv on the standard deconvolution workloads, side by side with plain
// oneDNN used the best way, in the same process, on the same buffers.
//
// For every workload, layout, data type and pass (forward, backward data, backward weights+bias)
// the main table shows the library's median time, its spread and GFLOP/s, and two baselines
// (bench.h, Baseline): onednn_kernel (the primitive alone, data already in its layouts) and
// onednn_plain (plain user buffers and the reorders they need), with lib/plain and lib/kernel.
// The library, both baselines and both data types of a row are called in alternation, so that
// machine noise hits all of them alike. A summary gives the geometric mean of lib/plain per
// pass and the largest row; derived tables give bf16/f32 and the small-problem overhead; with
// --variants the run also measures bias vs no bias, ADD vs WRITE and the channels-last
// zero-copy case. Every threshold of issue 4 gets a PASS/MISS verdict; verdicts never change
// the exit status (timings are measurements, not tests).
//
// What is timed for the library (handles and primitives are created outside the timing):
//   fwd          inference handle, deconv_set_weights() once, deconv_forward(weights = NULL)
//   bwd_data     training handle, deconv_backward() with only req_src
//   bwd_weights  training handle, deconv_backward() with req_weights and req_bias
// flops = 2*mb*ic*(oc/groups)*prod(kernel)*prod(in) for every pass.
//
// Threads: --threads N calls omp_set_num_threads(N) before the first library call (all work
// runs on the main thread, so that sets the OpenMP team size oneDNN uses). Without it the
// OpenMP default applies: OMP_NUM_THREADS from the environment, else one thread per core.
//
// Exit status: 0 all good; 1 a correctness check failed or a library call failed; 2 bad usage.
#include <omp.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench.h"
#include "default_shapes.h"

namespace bench {
namespace {

// ---- options ------------------------------------------------------------------------------------

void usage(FILE *f) {
    std::fprintf(f,
        "usage: deconv-bench [options]\n"
        "  --workloads FILE   workloads TSV (format of bench/shapes.tsv; default: the embedded copy)\n"
        "  --filter STR       only workloads whose name contains STR\n"
        "  --pass P           fwd | bwd_data | bwd_weights | all (default all)\n"
        "  --dtype D          f32 | bf16 | all (default all; bf16 only where supported)\n"
        "  --layout L         ncx (channels-first) | nxc (channels-last) | all (default ncx)\n"
        "  --threads N        OpenMP threads (omp_set_num_threads; default: OMP_NUM_THREADS or all cores)\n"
        "  --repeat N         exactly N timed calls per series instead of the time budget\n"
        "  --budget SEC       time budget per series and row (default 0.2 s; at least 5 calls)\n"
        "  --max-reps N       at most N timed calls per series with the budget (default 1000)\n"
        "  --compare          the plain oneDNN baselines onednn_kernel and onednn_plain (the default)\n"
        "  --no-onednn        no oneDNN baselines (library times only)\n"
        "  --variants         also measure bias vs no bias, ADD vs WRITE and channels-last zero-copy\n"
        "                     (roughly doubles the run time)\n"
        "  --no-check         skip the correctness check\n"
        "  --check-only       run only the correctness check\n"
        "  --csv              CSV on stdout: the main table, then blank-line separated blocks\n"
        "  --json             one JSON object on stdout (machine, rows, summary, tables, verdicts)\n"
        "  --help\n"
        "Progress goes to stderr; with --csv/--json the header and check lines do too.\n");
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
        } else if (a == "--max-reps") {
            o.max_reps = std::max(5, positive(value("--max-reps"), "--max-reps"));
        } else if (a == "--budget") {
            std::string v = value("--budget");
            char *end = nullptr;
            o.budget = std::strtod(v.c_str(), &end);
            if (*end || !(o.budget >= 0)) {
                std::fprintf(stderr, "deconv-bench: bad --budget '%s'\n", v.c_str());
                return false;
            }
        } else if (a == "--compare") {
            o.onednn = true;
        } else if (a == "--no-onednn") {
            o.onednn = false;
        } else if (a == "--variants") {
            o.variants = true;
        } else if (a == "--no-check") {
            o.check = false;
        } else if (a == "--check-only") {
            o.table = false;
        } else if (a == "--csv") {
            o.output = Output::CSV;
        } else if (a == "--json") {
            o.output = Output::JSON;
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

bool load_workloads(const Options &o, std::vector<Workload> &workloads) {
    std::string err;
    bool ok;
    if (o.workloads_file.empty()) {
        ok = parse_workloads(kDefaultShapesTsv, "bench/shapes.tsv (embedded)", workloads, err);
    } else {
        std::ifstream f(o.workloads_file);
        if (!f) {
            std::fprintf(stderr, "deconv-bench: cannot read %s\n", o.workloads_file.c_str());
            return false;
        }
        std::stringstream ss;
        ss << f.rdbuf();
        ok = parse_workloads(ss.str(), o.workloads_file, workloads, err);
    }
    if (!ok) {
        std::fprintf(stderr, "deconv-bench: %s\n", err.c_str());
        return false;
    }
    if (!o.filter.empty()) {
        workloads.erase(std::remove_if(workloads.begin(), workloads.end(),
                                       [&](const Workload &w) { return w.name.find(o.filter) == std::string::npos; }),
                        workloads.end());
        if (workloads.empty()) {
            std::fprintf(stderr, "deconv-bench: no workload matches --filter '%s'\n", o.filter.c_str());
            return false;
        }
    }
    return true;
}

// ---- machine ------------------------------------------------------------------------------------

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

std::string isa_name() {
    switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_sse41: return "sse41";
        case dnnl_cpu_isa_avx: return "avx";
        case dnnl_cpu_isa_avx2: return "avx2";
        case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
        case dnnl_cpu_isa_avx512_core: return "avx512_core";
        case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
        case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
        case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
        default: return "other";
    }
}

Machine machine_info(const Options &o, size_t n_workloads) {
    Machine m;
    const dnnl_version_t *dv = dnnl_version();
    const uint32_t v = deconv_version();
    m.cpu = cpu_model();
    m.isa = isa_name();
    m.onednn_version = std::to_string(dv->major) + "." + std::to_string(dv->minor) + "." + std::to_string(dv->patch);
    m.libdeconv_version =
        std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    m.workloads = o.workloads_file.empty() ? "embedded bench/shapes.tsv" : o.workloads_file;
    m.n_workloads = int(n_workloads);
    m.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
    m.threads = omp_get_max_threads();
    m.bf16 = deconv_bf16_supported() != 0;
    m.load_start = load_average();
    return m;
}

// ---- the main table -----------------------------------------------------------------------------

// Times one pass of one workload and layout for every data type (library and both baselines of
// every data type in alternation) and reports one row per data type. Returns failed rows.
int bench_pass(Pass p, std::vector<Case> &cases, const Options &o, Report &rep) {
    struct Slot {
        Row row;
        std::unique_ptr<Baseline> base;
        int lib = -1, kernel = -1, plain = -1;  // indices into calls
    };
    std::vector<Slot> slots(cases.size());
    std::vector<Call> calls;
    for (size_t i = 0; i < cases.size(); i++) {
        Case &c = cases[i];
        Slot &s = slots[i];
        s.row.problem = c.w->name;
        s.row.layout = layout_name(c.layout);
        s.row.pass = kPassName[p];
        s.row.dtype = dtype_name(c.dt);
        if (!c.skip.empty()) {
            s.row.note = c.skip;
            s.row.failed = c.failed;
            continue;
        }
        if (!c.error(p).empty()) {
            s.row.lib.error = c.error(p);
            continue;
        }
        s.lib = int(calls.size());
        calls.push_back(lib_call(p, c.handle(p), c.b, DECONV_REQ_WRITE));
        const char *impl = deconv_impl_name(c.handle(p), deconv_pass(p));
        s.row.impl = impl ? impl : "?";
        if (!o.onednn) continue;
        try {
            s.base = make_baseline(p, *c.w, c.dt, c.layout, c.b);
            s.row.dnn_impl = s.base->impl;
            s.row.reorders = s.base->reorders;
            s.kernel = int(calls.size());
            calls.push_back(baseline_call(*s.base, true));
            s.plain = int(calls.size());
            calls.push_back(baseline_call(*s.base, false));
        } catch (const dnnl::error &e) {
            s.row.kernel.error = s.row.plain.error = e.what();
        }
    }
    const std::vector<Timing> t = measure(calls, o);
    int failures = 0;
    const double load = load_average();
    for (size_t i = 0; i < cases.size(); i++) {
        Row &r = slots[i].row;
        if (slots[i].lib >= 0) r.lib = t[size_t(slots[i].lib)];
        if (slots[i].kernel >= 0) r.kernel = t[size_t(slots[i].kernel)];
        if (slots[i].plain >= 0) r.plain = t[size_t(slots[i].plain)];
        if (r.note.empty() && !r.lib.ok) r.failed = true;
        r.gflops = r.lib.ok ? cases[i].w->flops() / (r.lib.median * 1e-3) / 1e9 : 0;
        r.load = load;
        failures += r.failed;
        rep.row(r);
    }
    return failures;
}

int run_main_table(const std::vector<Workload> &workloads, const Options &o, Report &rep) {
    const bool need_inf = std::count(o.passes.begin(), o.passes.end(), FWD) > 0;
    const bool need_train = o.passes.size() > size_t(need_inf);
    const size_t per_pass = o.dtypes.size(), total = workloads.size() * o.layouts.size() * o.passes.size() * per_pass;
    std::string dtypes;
    for (deconv_dtype d : o.dtypes) dtypes += (dtypes.empty() ? "" : "+") + std::string(dtype_name(d));
    const auto t0 = std::chrono::steady_clock::now();
    size_t done = 0;
    int failures = 0;
    for (const Workload &w : workloads)
        for (deconv_layout l : o.layouts) {
            std::vector<Case> cases(o.dtypes.size());
            for (size_t i = 0; i < cases.size(); i++) setup(cases[i], w, o.dtypes[i], l, need_inf, need_train);
            for (Pass p : o.passes) {
                const std::string rows = per_pass == 1 ? std::to_string(done + 1)
                                                       : std::to_string(done + 1) + "-" + std::to_string(done + per_pass);
                std::fprintf(stderr, "[%s/%zu] %s %s %s %s (%.0f s)\n", rows.c_str(), total, w.name.c_str(),
                             layout_name(l), kPassName[p], dtypes.c_str(), since(t0));
                failures += bench_pass(p, cases, o, rep);
                done += per_pass;
            }
        }
    return failures;
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) {
    using namespace bench;
    Options o;
    if (!parse_args(argc, argv, o)) {
        usage(stderr);
        return 2;
    }
    // Before any library call, so oneDNN's first OpenMP region already uses this team size.
    if (o.threads) omp_set_num_threads(o.threads);
    std::vector<Workload> workloads;
    if (!load_workloads(o, workloads)) return 2;

    const auto t0 = std::chrono::steady_clock::now();
    Machine m = machine_info(o, workloads.size());
    size_t name_w = 7;
    for (const Workload &w : workloads) name_w = std::max(name_w, w.name.size());
    Report rep(o, name_w);
    rep.start(m);

    int check_failures = 0;
    if (o.check) {
        for (deconv_layout l : o.layouts)
            for (deconv_dtype dt : o.dtypes) {
                for (Pass p : o.passes) {
                    CheckResult c = check_one(p, dt, l);
                    check_failures += !c.ok;
                    rep.check(c);
                }
            }
        rep.check_done(check_failures);
    }

    int row_failures = 0;
    if (o.table) {
        rep.main_header();
        row_failures += run_main_table(workloads, o, rep);
        std::fprintf(stderr, "main table done in %.0f s\n", since(t0));
        if (o.onednn) rep.add_table(small_table(rep.rows()));
        if (o.dtypes.size() == 2) rep.add_table(bf16_table(rep.rows()));
        if (o.variants) row_failures += run_variants(workloads, o, rep);
    }
    m.load_end = load_average();
    m.seconds = since(t0);
    if (o.table || o.output == Output::JSON) rep.finish(m);
    if (check_failures || row_failures) {
        std::fprintf(stderr, "deconv-bench: %d check(s) failed, %d measurement(s) failed\n", check_failures,
                     row_failures);
        return 1;
    }
    return 0;
}
