// deconv-bench internals, shared by the files of bench/:
//   workloads.cpp  the TSV workload format, buffers with the peers' deterministic data, the
//                  library calls that are timed
//   timing.cpp     alternating timing of several calls
//   baseline.cpp   plain oneDNN used the best way: onednn_kernel and onednn_plain
//   check.cpp      the correctness check against the naive reference
//   report.cpp     table, CSV and JSON output, geometric means, issue-4 verdicts
//   variants.cpp   tables derived from the main table, and the --variants measurements
//   deconv_bench.cpp  options, machine information, the main table
#pragma once

#include <deconv.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// ---- workloads (workloads.cpp) ------------------------------------------------------------------

struct Workload {
    std::string name;
    int64_t mb = 1, ic = 1, oc = 1, groups = 1;
    int rank = 0;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0},
            d[3] = {1, 1, 1}, adj[3] = {0, 0, 0};

    // 2*mb*ic*(oc/groups)*prod(kernel)*prod(in), the peers' count, used for every pass.
    double flops() const;
    int64_t out(int i) const { return s[i] * (in[i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * p[i] + adj[i]; }
};

// The bench/shapes.tsv format; false with a message naming file and line on the first bad line.
bool parse_workloads(const std::string &text, const std::string &origin, std::vector<Workload> &out,
                     std::string &err);

enum Pass { FWD = 0, BWD_DATA = 1, BWD_WEIGHTS = 2 };
extern const char *const kPassName[3];
inline const char *dtype_name(deconv_dtype t) { return t == DECONV_F32 ? "f32" : "bf16"; }
inline const char *layout_name(deconv_layout l) { return l == DECONV_CHANNELS_FIRST ? "ncx" : "nxc"; }

// ---- options (deconv_bench.cpp) -----------------------------------------------------------------

enum class Output { TABLE, CSV, JSON };

struct Options {
    std::string workloads_file;  // empty: the embedded bench/shapes.tsv
    std::string filter;
    std::vector<Pass> passes{FWD, BWD_DATA, BWD_WEIGHTS};
    std::vector<deconv_dtype> dtypes{DECONV_F32, DECONV_BF16};
    std::vector<deconv_layout> layouts{DECONV_CHANNELS_FIRST};
    int threads = 0;     // 0: OpenMP default
    int repeat = 0;      // 0: time budget
    int max_reps = 1000;  // cap on timed calls per series with the time budget
    double budget = 0.2;  // seconds per series and row
    bool onednn = true, check = true, table = true, variants = false;
    Output output = Output::TABLE;
};

// ---- buffers and library calls (workloads.cpp) ------------------------------------------------

// A dense buffer of n elements in the handle's data type (bf16 as raw words).
struct Buffer {
    deconv_dtype dt = DECONV_F32;
    std::vector<float> f;
    std::vector<uint16_t> h;

    Buffer() = default;
    Buffer(deconv_dtype t, int64_t n);
    void *data() { return dt == DECONV_F32 ? (void *)f.data() : (void *)h.data(); }
    size_t size() const { return dt == DECONV_F32 ? f.size() : h.size(); }
    void set(const std::vector<float> &v);
    std::vector<double> to_double() const;
};

// Every buffer of one workload and data type, shared by the library and the baseline, filled
// with the peers' deterministic data (shared/peers/common/shapes.h).
struct Buffers {
    Buffer src, wei, bias, dst, diff_dst, diff_src, diff_wei, diff_bias;
    // The baseline takes f32 bias and diff_bias for bf16 too, as the peers do (and f32
    // diff_weights should oneDNN refuse bf16 ones).
    std::vector<float> bias_f32, diff_bias_f32, diff_wei_f32;
};
Buffers make_buffers(const Workload &w, deconv_dtype dt);

deconv_params make_params(const Workload &w, deconv_dtype dt, deconv_layout layout, deconv_mode mode,
                          bool bias = true);
std::string lib_error(deconv_status s, const char *call);

struct Handle {
    deconv *h = nullptr;
    Handle() = default;
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    ~Handle() { deconv_destroy(h); }
};

// A timed call: "" or an error message.
using Call = std::function<std::string()>;

// The library call timed for a pass, writing (or adding, req) its outputs:
//   fwd          deconv_forward(weights = NULL) on an inference handle after deconv_set_weights
//   bwd_data     deconv_backward with only diff_src requested
//   bwd_weights  deconv_backward with diff_weights and (unless no_bias) diff_bias requested
Call lib_call(Pass pass, deconv *h, Buffers &b, deconv_req req, bool bias = true);

// One workload, layout and data type: its buffers and library handles. Not copyable: timed
// calls hold references into it.
struct Case {
    const Workload *w = nullptr;
    deconv_dtype dt = DECONV_F32;
    deconv_layout layout = DECONV_CHANNELS_FIRST;
    std::string skip;     // why nothing runs ("skipped: bf16 not supported", or an error)
    bool failed = false;  // skip is a library error
    Buffers b;
    Handle inf, train;
    std::string inf_err, train_err;  // creating the handle failed

    deconv *handle(Pass p) const { return p == FWD ? inf.h : train.h; }
    const std::string &error(Pass p) const { return p == FWD ? inf_err : train_err; }
};

// Fills the buffers, creates the inference handle (and sets its weights) and/or the training
// handle. bias = false: a no_bias problem.
void setup(Case &c, const Workload &w, deconv_dtype dt, deconv_layout layout, bool need_inf, bool need_train,
           bool bias = true);

inline double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- timing (timing.cpp) ------------------------------------------------------------------------

struct Timing {
    bool ok = false;
    std::string error;
    double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;  // ms; q1, q3: quartiles
    int reps = 0;       // timed calls
    int preempted = 0;  // of them, calls that waited for a core another process held
    bool all_samples = false;  // fewer than 5 calls ran undisturbed: statistics of all calls
};

// Times the calls in alternation (one call of each per round), so that every series sees the
// same machine noise and ratios between them stay meaningful on a busy machine. Warm-up: each
// call once, twice when it takes < 50 ms. Then rounds (each series once, starting one series
// later every round) until o.repeat rounds, or until at least 5 rounds have run and the group
// has used o.budget seconds per series, or o.max_reps rounds. Calls that were preempted (their
// threads waited for a core another process held, per /proc/self/task/*/schedstat: with OpenMP
// the call then waits milliseconds for the scheduler) are left out of the statistics when at
// least 5 others remain; on a busy machine the rounds go on, up to twice the budget, to
// get those 5.
// A call that fails drops out (its Timing carries the error); the others go on.
std::vector<Timing> measure(const std::vector<Call> &calls, const Options &o);

// ---- the plain oneDNN baseline (baseline.cpp) ---------------------------------------------------

// One oneDNN deconvolution primitive for a pass, made with format_tag::any as
// shared/peers/onednn_raw.cpp does, on the same user buffers as the library, and two ways to run
// it (each call executes and waits on the stream):
//   kernel  onednn_kernel: data already in the primitive's layouts (copied there once), weights
//           packed once; only the primitive runs.
//   plain   onednn_plain: the user's plain buffers, with every reorder they need inside the call:
//           fwd src in, dst out (weights packed once, as for inference); bwd_data diff_dst and
//           weights in (the weights change every training step), diff_src out; bwd_weights src
//           and diff_dst in, diff_weights out (diff_bias is plain). None where the layouts agree.
// bf16 problems use f32 bias and diff_bias, as the peers do.
class Baseline {
public:
    virtual ~Baseline() = default;
    virtual void kernel() = 0;
    virtual void plain() = 0;
    std::string impl;              // impl_info_str()
    std::string reorders;          // what plain() reorders, e.g. "src,dst"; "" when nothing
    std::string src_fmt, dst_fmt;  // the primitive's data layouts ("nchw", "nChw16c", ...)
    bool data_layouts_match = false;  // the primitive's src and dst layouts are the user's
};

// Throws dnnl::error when oneDNN refuses the problem. bias = false: a primitive without bias.
std::unique_ptr<Baseline> make_baseline(Pass pass, const Workload &w, deconv_dtype dt, deconv_layout layout,
                                        Buffers &b, bool bias = true);
// A timed call of b.kernel() or b.plain(); a oneDNN error becomes the call's error message.
Call baseline_call(Baseline &b, bool kernel);

// ---- correctness check (check.cpp) --------------------------------------------------------------

struct CheckResult {
    std::string pass, dtype, layout, error;
    double rel_err = 0, tol = 0;
    bool ok = false;
};
// One small problem with every feature (groups, stride, pad, dilation, adj, bias) per pass,
// against the naive double-precision reference.
CheckResult check_one(Pass pass, deconv_dtype dt, deconv_layout layout);

// ---- ratio tables (variants.cpp) ----------------------------------------------------------------

struct Row;
struct RatioTable;
class Report;
// From the main table: bf16/f32 of the library (item 6) and the small-problem overhead (item 7).
RatioTable bf16_table(const std::vector<Row> &rows);
RatioTable small_table(const std::vector<Row> &rows);
// --variants: bias vs no bias (item 3), ADD vs WRITE (item 4), channels-last zero-copy (item 5),
// each added to the report. Returns the number of failed library calls.
int run_variants(const std::vector<Workload> &workloads, const Options &o, Report &rep);

// ---- results and output (report.cpp) ------------------------------------------------------------

// One row of the main table: the library and the two baselines on one problem.
struct Row {
    std::string problem, layout, pass, dtype;
    Timing lib, kernel, plain;
    double gflops = 0, load = 0;
    std::string impl, dnn_impl, reorders, note;  // note: why the row was not measured
    bool failed = false;                         // a library error (counts for the exit status)
};

// A variant measurement: a ratio num/den (or, for the small-problem table, the difference
// num - den in microseconds) with an optional context ratio of two other series, and whether
// the issue-4 threshold applies to the row.
struct RatioRow {
    std::string problem, layout, pass, dtype;
    Timing num, den, ctx_num, ctx_den;
    bool applies = true;
    std::string info, note;  // info: an extra column (e.g. the chosen layout); note: not measured
};

struct RatioTable {
    std::string id;     // JSON key / CSV table name
    int item = 0;       // the item of issue 4 whose threshold applies
    std::string title;  // also the verdict's name
    std::string explanation;                   // printed under the title
    std::string num_name, den_name, value_name, ctx_name;  // column names; no ctx_name: no context
    bool difference_us = false;  // the value is (num - den) in us instead of num / den
    double limit = 0;            // PASS when every applicable row's value is <= limit
    std::vector<RatioRow> rows;
};

struct Machine {
    std::string cpu, isa, onednn_version, libdeconv_version, workloads;
    int cores = 0, threads = 0, n_workloads = 0;
    bool bf16 = false;
    double load_start = 0, load_end = 0, seconds = 0;
};

// Collects every result and prints it: the table and CSV stream rows as they come (so a long
// run shows progress), JSON is written at the end. In CSV and JSON mode the human-readable
// lines (machine, check) go to stderr, so stdout stays machine-readable.
class Report {
public:
    Report(const Options &o, size_t name_width) : o_(o), name_w_(name_width) {}
    void start(const Machine &m);
    void check(const CheckResult &c);
    void check_done(int failures);
    void main_header();
    void row(const Row &r);
    void add_table(RatioTable t) { tables_.push_back(std::move(t)); }
    // The per-pass summary, the ratio tables and the issue-4 verdicts (JSON: everything).
    void finish(const Machine &m);
    const std::vector<Row> &rows() const { return rows_; }

    // Geometric mean of lib/plain (and lib/kernel) over the rows of a pass and dtype ("all":
    // every dtype and layout), and the largest lib/plain row.
    struct Summary {
        std::string pass, layout, dtype, max_row;
        int rows = 0, contended = 0;  // contended rows are left out
        double geo_plain = 0, geo_kernel = 0, max_plain = 0;
    };
    struct Verdict {
        int item = 0;
        std::string what, limit, value, worst, status;  // status: PASS, MISS or n/a
        int over = 0, rows = 0, skipped = 0;  // skipped: contended rows left out
    };

private:
    FILE *human() const { return o_.output == Output::TABLE ? stdout : stderr; }
    void compute();
    void print_summary() const;
    void print_table(const RatioTable &t) const;
    void print_verdicts() const;
    void print_csv_blocks() const;
    void print_json(const Machine &m) const;

    const Options &o_;
    size_t name_w_;
    std::vector<CheckResult> checks_;
    std::vector<Row> rows_;
    std::vector<RatioTable> tables_;
    std::vector<Summary> summary_;
    std::vector<Verdict> verdicts_;
};

double load_average();  // 1-minute load average, -1 if unknown

}  // namespace bench
