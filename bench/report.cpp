// Output of deconv-bench: the main table, the per-pass summary, the ratio tables and the issue-4
// verdicts, as a readable table, as CSV blocks or as one JSON object.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <fstream>
#include <initializer_list>

#include "bench.h"

namespace bench {
namespace {

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...) {
    char b[256];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}

std::string ms(double v) { return fmt(v < 10 ? "%.4f" : v < 100 ? "%.3f" : "%.2f", v); }

// "-3%/+12%": the quartiles relative to the median. Unlike min and max, one stalled call (a
// descheduled OpenMP thread costs milliseconds) does not swamp it; a wide range means the row's
// ratios are not worth much.
std::string spread(const Timing &t) {
    const double lo = 100 * (1 - t.q1 / t.median), hi = 100 * (t.q3 / t.median - 1);
    return hi > 999 ? fmt("-%.0f%%/>999%%", lo) : fmt("-%.0f%%/+%.0f%%", lo, hi);
}

double ratio(const Timing &a, const Timing &b) {
    return a.ok && b.ok && b.median > 0 ? a.median / b.median : NAN;
}

double value_of(const RatioTable &t, const RatioRow &r) {
    if (!t.difference_us) return ratio(r.num, r.den);
    return r.num.ok && r.den.ok ? (r.num.median - r.den.median) * 1e3 : NAN;
}

double ctx_of(const RatioTable &t, const RatioRow &r) {
    if (t.ctx_name.empty()) return NAN;
    if (!t.difference_us) return ratio(r.ctx_num, r.ctx_den);
    return r.ctx_num.ok && r.ctx_den.ok ? (r.ctx_num.median - r.ctx_den.median) * 1e3 : NAN;
}

std::string show(const RatioTable &t, double v) {
    if (std::isnan(v)) return "n/a";
    return t.difference_us ? fmt("%+.1f us", v) : fmt("%.2fx", v);
}

std::string limit_text(const RatioTable &t) {
    return t.difference_us ? fmt("<= %g us", t.limit) : fmt("<= %.2f", t.limit);
}

// "PASS", "MISS" or "-" (threshold does not apply, or nothing measured).
std::string row_verdict(const RatioTable &t, const RatioRow &r) {
    const double v = value_of(t, r);
    if (!r.applies || std::isnan(v)) return "-";
    return v <= t.limit + 1e-12 ? "PASS" : "MISS";
}

std::string row_name(const std::string &problem, const std::string &layout, const std::string &pass,
                     const std::string &dtype) {
    std::string s = problem;
    for (const std::string *p : {&layout, &pass, &dtype})
        if (!p->empty()) s += " " + *p;
    return s;
}

// A small streaming JSON writer: objects and arrays with optional keys, two-space indentation.
class Json {
public:
    explicit Json(FILE *f) : f_(f) {}
    void begin(const char *key, char bracket) {
        item(key);
        std::fputc(bracket, f_);
        first_.push_back(true);
    }
    void end(char bracket) {
        first_.pop_back();
        std::fprintf(f_, "\n%*s%c", int(2 * first_.size()), "", bracket);
        if (first_.empty()) std::fputc('\n', f_);
    }
    void str(const char *key, const std::string &v) {
        item(key);
        quoted(v);
    }
    void num(const char *key, double v) {
        item(key);
        if (std::isfinite(v)) std::fprintf(f_, "%.6g", v);
        else std::fputs("null", f_);
    }
    void integer(const char *key, long long v) {
        item(key);
        std::fprintf(f_, "%lld", v);
    }
    void boolean(const char *key, bool v) {
        item(key);
        std::fputs(v ? "true" : "false", f_);
    }
    void null(const char *key) {
        item(key);
        std::fputs("null", f_);
    }
    void timing(const char *key, const Timing &t) {
        if (!t.ok && t.error.empty()) return null(key);
        begin(key, '{');
        if (t.ok) {
            num("ms", t.median);
            num("min_ms", t.min);
            num("max_ms", t.max);
            num("q1_ms", t.q1);
            num("q3_ms", t.q3);
            integer("reps", t.reps);
            integer("preempted", t.preempted);
            boolean("stats_of_all_calls", t.all_samples);
        } else {
            str("error", t.error);
        }
        end('}');
    }

private:
    void item(const char *key) {
        if (!first_.empty()) {
            std::fputs(first_.back() ? "\n" : ",\n", f_);
            first_.back() = false;
            std::fprintf(f_, "%*s", int(2 * first_.size()), "");
        }
        if (key) {
            quoted(key);
            std::fputs(": ", f_);
        }
    }
    void quoted(const std::string &s) {
        std::fputc('"', f_);
        for (unsigned char c : s) {
            if (c == '"' || c == '\\') std::fprintf(f_, "\\%c", c);
            else if (c < 0x20) std::fprintf(f_, "\\u%04x", c);
            else std::fputc(c, f_);
        }
        std::fputc('"', f_);
    }
    FILE *f_;
    std::vector<bool> first_;
};

// CSV cells: commas would split a cell; notes and errors have them.
std::string csv_cell(std::string s) {
    std::replace(s.begin(), s.end(), ',', ';');
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
}
std::string csv_num(double v) { return std::isfinite(v) ? fmt("%.6g", v) : ""; }

// A row whose library or baseline quartiles span more than 20% of the median: a busy machine
// (or a bimodal kernel); its ratios are not worth much.
bool noisy(const Row &r) {
    for (const Timing *t : {&r.lib, &r.kernel, &r.plain})
        if (t->ok && t->reps >= 4 && (t->q3 - t->q1) > 0.2 * t->median) return true;
    return false;
}

// Fewer than 5 calls of some series ran without being preempted: the row times the scheduler.
bool contended(std::initializer_list<const Timing *> ts) {
    for (const Timing *t : ts)
        if (t->ok && t->all_samples) return true;
    return false;
}
bool contended(const Row &r) { return contended({&r.lib, &r.kernel, &r.plain}); }

// Share of the row's timed calls (all series) during which the process was preempted.
double preempted_share(const Row &r) {
    int n = 0, p = 0;
    for (const Timing *t : {&r.lib, &r.kernel, &r.plain})
        if (t->ok) {
            n += t->reps;
            p += t->preempted;
        }
    return n ? double(p) / n : 0;
}

}  // namespace

double load_average() {
    std::ifstream f("/proc/loadavg");
    double l = -1;
    f >> l;
    return l;
}

// ---- streaming part -----------------------------------------------------------------------------

void Report::start(const Machine &m) {
    FILE *f = human();
    std::fprintf(f, "# libdeconv %s, oneDNN %s, %s (ISA %s), %d cores, %d OpenMP threads, bf16 %s, load average %.2f\n",
                 m.libdeconv_version.c_str(), m.onednn_version.c_str(), m.cpu.c_str(), m.isa.c_str(), m.cores,
                 m.threads, m.bf16 ? "supported" : "not supported", m.load_start);
    if (m.load_start > 0.5 * m.cores)
        std::fprintf(f,
                     "# NOTE: load average %.2f on %d cores before the start: other processes are running. With "
                     "OpenMP one busy core stalls every barrier: times are inflated and noisy, ratios much less.\n",
                     m.load_start, m.cores);
    if (o_.table) {
        std::fprintf(f, "# workloads: %s (%d); ", m.workloads.c_str(), m.n_workloads);
        if (o_.repeat) std::fprintf(f, "timing: median of %d calls after warm-up", o_.repeat);
        else
            std::fprintf(f, "timing: median of 5..%d calls (%.2g s per series) after warm-up", o_.max_reps,
                         o_.budget);
        std::fprintf(f, ", all series of a row called in alternation; calls preempted by other processes left out "
                        "when 5 others remain\n");
    }
    std::fflush(f);
}

void Report::check(const CheckResult &c) {
    checks_.push_back(c);
    FILE *f = human();
    std::fprintf(f, "check %-11s %-4s %s  ", c.pass.c_str(), c.dtype.c_str(), c.layout.c_str());
    if (!c.error.empty()) std::fprintf(f, "ERROR %s  FAIL\n", c.error.c_str());
    else std::fprintf(f, "max rel err %.2e (tol %.0e)  %s\n", c.rel_err, c.tol, c.ok ? "PASS" : "FAIL");
}

void Report::check_done(int failures) {
    std::fprintf(human(), "check: %s\n\n", failures ? "FAIL" : "all PASS");
    std::fflush(human());
}

void Report::main_header() {
    if (o_.output == Output::JSON) return;
    if (o_.output == Output::CSV) {
        std::printf("problem,layout,pass,dtype,ms,min_ms,max_ms,q1_ms,q3_ms,reps,gflops,kernel_ms,plain_ms,lib_plain,lib_kernel,"
                    "impl,onednn_impl,plain_reorders,load,preempted_share,contended,note\n");
        return;
    }
    if (o_.onednn)
        std::printf("# lib = libdeconv; kernel = onednn_kernel (data already in the primitive's layouts, weights packed: "
                    "the primitive alone);\n# plain = onednn_plain (the user's plain buffers and the reorders they "
                    "need, listed in {}; weights packed once in fwd, reordered per call in bwd_data)\n");
    std::printf("# q1/q3 = quartiles of lib relative to its median; pre = share of the row's calls that waited for a "
                "core another process held\n# (left out of the statistics; '!': fewer than 5 calls of a series ran undisturbed, "
                "the row times the scheduler)\n");
    std::printf("%-*s  %-6s %-11s %-5s %10s %-11s %5s %8s", int(name_w_), "problem", "layout", "pass", "dtype",
                "lib ms", " q1/q3", "pre", "GFLOP/s");
    if (o_.onednn) std::printf(" %10s %10s %9s %10s", "kernel ms", "plain ms", "lib/plain", "lib/kernel");
    std::printf(o_.onednn ? "  impl {plain reorders}\n" : "  impl\n");
    std::printf("%s\n", std::string(name_w_ + 2 + 7 + 12 + 6 + 11 + 12 + 6 + 9 + (o_.onednn ? 42 : 0) + 2 + 30, '-').c_str());
    std::fflush(stdout);
}

void Report::row(const Row &r) {
    rows_.push_back(r);
    if (o_.output == Output::JSON) return;
    const std::string note = r.note.empty() ? (r.lib.ok ? r.kernel.error : r.lib.error) : r.note;
    if (o_.output == Output::CSV) {
        std::printf("%s,%s,%s,%s,", r.problem.c_str(), r.layout.c_str(), r.pass.c_str(), r.dtype.c_str());
        if (r.lib.ok)
            std::printf("%.6g,%.6g,%.6g,%.6g,%.6g,%d,%.4g,", r.lib.median, r.lib.min, r.lib.max, r.lib.q1, r.lib.q3,
                        r.lib.reps, r.gflops);
        else
            std::printf(",,,,,,,");
        std::printf("%s,%s,%s,%s,", r.kernel.ok ? csv_num(r.kernel.median).c_str() : "",
                    r.plain.ok ? csv_num(r.plain.median).c_str() : "", csv_num(ratio(r.lib, r.plain)).c_str(),
                    csv_num(ratio(r.lib, r.kernel)).c_str());
        std::printf("%s,%s,%s,%.2f,%.3f,%d,%s\n", csv_cell(r.impl).c_str(), csv_cell(r.dnn_impl).c_str(),
                    csv_cell(r.reorders).c_str(), r.load, preempted_share(r), int(contended(r)),
                    csv_cell(note).c_str());
        std::fflush(stdout);
        return;
    }
    std::printf("%-*s  %-6s %-11s %-5s ", int(name_w_), r.problem.c_str(), r.layout.c_str(), r.pass.c_str(),
                r.dtype.c_str());
    if (!r.note.empty()) {
        std::printf("%s\n", r.note.c_str());
    } else if (!r.lib.ok) {
        std::printf("ERROR %s\n", r.lib.error.c_str());
    } else {
        const std::string pre = fmt("%.0f%%", 100 * preempted_share(r)) + (contended(r) ? "!" : " ");
        std::printf("%10s %-11s %5s %8.1f", ms(r.lib.median).c_str(), spread(r.lib).c_str(), pre.c_str(), r.gflops);
        if (o_.onednn) {
            if (r.kernel.ok && r.plain.ok)
                std::printf(" %10s %10s %8.2fx %9.2fx", ms(r.kernel.median).c_str(), ms(r.plain.median).c_str(),
                            ratio(r.lib, r.plain), ratio(r.lib, r.kernel));
            else
                std::printf(" %10s %10s %9s %10s", "n/a", "n/a", "", "");
        }
        std::printf("  %s", r.impl.c_str());
        // The library's name adds the layout and the batch chunks to oneDNN's ("jit:avx512_core
        // on nChw16c (batch in 8 chunks)"): oneDNN's is shown where it picked another kernel.
        const std::string same_kernel = r.impl.substr(0, r.impl.find(' '));
        if (o_.onednn && !r.dnn_impl.empty() && r.dnn_impl != same_kernel) std::printf(" (oneDNN: %s)", r.dnn_impl.c_str());
        if (o_.onednn && (r.kernel.ok || r.plain.ok)) std::printf(" {%s}", r.reorders.c_str());
        if (o_.onednn && !r.kernel.error.empty()) std::printf(" (oneDNN failed: %s)", r.kernel.error.c_str());
        std::printf("\n");
    }
    std::fflush(stdout);
}

// ---- summary and verdicts -----------------------------------------------------------------------

void Report::compute() {
    summary_.clear();
    verdicts_.clear();
    if (o_.onednn) {
        // Groups in order of appearance: per pass, layout and dtype, then per pass overall.
        std::vector<std::string> passes;
        for (const Row &r : rows_)
            if (std::find(passes.begin(), passes.end(), r.pass) == passes.end()) passes.push_back(r.pass);
        auto group = [&](const std::string &pass, const std::string &layout, const std::string &dtype) {
            Summary s;
            s.pass = pass;
            s.layout = layout;
            s.dtype = dtype;
            double lp = 0, lk = 0;
            int nk = 0;
            for (const Row &r : rows_) {
                if (r.pass != pass || (layout != "all" && r.layout != layout) || (dtype != "all" && r.dtype != dtype))
                    continue;
                if (contended(r)) {  // it timed the scheduler
                    s.contended += r.lib.ok;
                    continue;
                }
                const double p = ratio(r.lib, r.plain), k = ratio(r.lib, r.kernel);
                if (!std::isnan(p)) {
                    lp += std::log(p);
                    s.rows++;
                    if (p > s.max_plain) {
                        s.max_plain = p;
                        s.max_row = row_name(r.problem, layout == "all" ? r.layout : "", "",
                                             dtype == "all" ? r.dtype : "");
                    }
                }
                if (!std::isnan(k)) {
                    lk += std::log(k);
                    nk++;
                }
            }
            s.geo_plain = s.rows ? std::exp(lp / s.rows) : NAN;
            s.geo_kernel = nk ? std::exp(lk / nk) : NAN;
            if (s.rows || s.contended) summary_.push_back(s);
        };
        for (const std::string &pass : passes) {
            for (deconv_layout l : o_.layouts)
                for (deconv_dtype d : o_.dtypes) group(pass, layout_name(l), dtype_name(d));
            group(pass, "all", "all");
        }
        for (const Summary &s : summary_) {
            if (s.layout != "all") continue;
            Verdict v;
            v.item = 2;
            v.what = "geomean lib/plain " + s.pass;
            v.limit = "<= 1.03";
            v.value = s.rows ? fmt("%.3fx", s.geo_plain) : "n/a";
            v.status = !s.rows ? "n/a" : s.geo_plain <= 1.03 ? "PASS" : "MISS";
            v.rows = s.rows;
            v.skipped = s.contended;
            verdicts_.push_back(v);
        }
        Verdict v;
        v.item = 2;
        v.what = "every row lib/plain";
        v.limit = "<= 1.10";
        double worst = 0;
        for (const Row &r : rows_) {
            const double p = ratio(r.lib, r.plain);
            if (std::isnan(p)) continue;
            if (contended(r)) {
                v.skipped++;
                continue;
            }
            v.rows++;
            v.over += p > 1.10;
            if (p > worst) {
                worst = p;
                v.worst = row_name(r.problem, r.layout, r.pass, r.dtype);
            }
        }
        v.value = v.rows ? fmt("%.2fx", worst) : "n/a";
        v.status = !v.rows ? "n/a" : v.over ? "MISS" : "PASS";
        verdicts_.push_back(v);
    }
    for (const RatioTable &t : tables_) {
        Verdict v;
        v.item = t.item;
        v.what = t.title;
        v.limit = limit_text(t);
        double worst = -INFINITY;
        for (const RatioRow &r : t.rows) {
            const double x = value_of(t, r);
            if (!r.applies || std::isnan(x)) continue;
            if (contended({&r.num, &r.den})) {
                v.skipped++;
                continue;
            }
            v.rows++;
            v.over += row_verdict(t, r) == "MISS";
            if (x > worst) {
                worst = x;
                v.worst = row_name(r.problem, r.layout, r.pass, r.dtype);
            }
        }
        v.value = v.rows ? show(t, worst) : "n/a";
        v.status = !v.rows ? "n/a" : v.over ? "MISS" : "PASS";
        verdicts_.push_back(v);
    }
    std::stable_sort(verdicts_.begin(), verdicts_.end(), [](const Verdict &a, const Verdict &b) { return a.item < b.item; });
}

void Report::print_summary() const {
    if (summary_.empty()) return;
    std::printf("\nSummary: lib/plain per pass (geometric mean over the rows; the largest row; contended rows left "
                "out)\n");
    std::printf("%-11s %-6s %-5s %5s %14s %15s %14s  %s\n", "pass", "layout", "dtype", "rows", "geo lib/plain",
                "geo lib/kernel", "max lib/plain", "(row)");
    for (const Summary &s : summary_) {
        std::printf("%-11s %-6s %-5s %5d ", s.pass.c_str(), s.layout.c_str(), s.dtype.c_str(), s.rows);
        if (!s.rows) std::printf("%14s %15s %14s  %-28s", "n/a", "n/a", "n/a", "");
        else
            std::printf("%13.3fx %14.3fx %13.2fx  %-28s", s.geo_plain, s.geo_kernel, s.max_plain, s.max_row.c_str());
        if (s.layout == "all" && s.rows)
            std::printf(" geomean %s, max %s", s.geo_plain <= 1.03 ? "PASS" : "MISS",
                        s.max_plain <= 1.10 ? "PASS" : "MISS");
        if (s.contended) std::printf(" (%d contended left out)", s.contended);
        std::printf("\n");
    }
}

void Report::print_table(const RatioTable &t) const {
    std::printf("\n%s (target: %s)\n", t.title.c_str(), limit_text(t).c_str());
    if (!t.explanation.empty()) std::printf("  %s\n", t.explanation.c_str());
    const int cw = std::max<int>(10, int(t.ctx_name.size()));
    std::printf("%-*s  %-6s %-11s %-5s %12s %12s %10s", int(name_w_), "problem", "layout", "pass", "dtype",
                t.den_name.c_str(), t.num_name.c_str(), t.value_name.c_str());
    if (!t.ctx_name.empty()) std::printf(" %*s", cw, t.ctx_name.c_str());
    std::printf("  %-7s %s\n", "verdict", "");
    if (t.rows.empty()) std::printf("  (no rows)\n");
    for (const RatioRow &r : t.rows) {
        std::printf("%-*s  %-6s %-11s %-5s ", int(name_w_), r.problem.c_str(), r.layout.c_str(), r.pass.c_str(),
                    r.dtype.c_str());
        if (!r.note.empty()) {
            std::printf("%s\n", r.note.c_str());
            continue;
        }
        std::printf("%12s %12s %10s", r.den.ok ? ms(r.den.median).c_str() : "n/a",
                    r.num.ok ? ms(r.num.median).c_str() : "n/a", show(t, value_of(t, r)).c_str());
        if (!t.ctx_name.empty()) std::printf(" %*s", cw, show(t, ctx_of(t, r)).c_str());
        std::printf("  %-7s", row_verdict(t, r).c_str());
        if (contended({&r.num, &r.den, &r.ctx_num, &r.ctx_den})) std::printf(" (contended!)");
        if (!r.info.empty()) std::printf(" %s", r.info.c_str());
        for (const Timing *x : {&r.num, &r.den, &r.ctx_num, &r.ctx_den})
            if (!x->error.empty()) std::printf(" (failed: %s)", x->error.c_str());
        std::printf("\n");
    }
}

void Report::print_verdicts() const {
    if (verdicts_.empty()) return;
    std::printf("\nPerformance targets (measurements, not tests: timings are noisy, a MISS by a few %% may be noise)\n");
    int n = 0, measured = 0, busy = 0;
    for (const Row &r : rows_) {
        measured += r.lib.ok;
        n += r.lib.ok && noisy(r);
        busy += r.lib.ok && contended(r);
    }
    if (busy)
        std::printf("  NOTE: %d of %d main rows are contended ('!' after pre%%: fewer than 5 calls of a series ran "
                    "without being preempted by another process): their times measure the scheduler\n",
                    busy, measured);
    if (n)
        std::printf("  NOTE: %d of %d main rows are noisy (quartiles of a series wider than 20%% of its median); "
                    "re-run those on a quiet machine\n",
                    n, measured);
    for (const Verdict &v : verdicts_) {
        std::printf("  %-44s %-9s %-9s %-4s", v.what.c_str(), v.limit.c_str(), v.value.c_str(),
                    v.status.c_str());
        std::vector<std::string> details;
        if (!v.worst.empty()) details.push_back("worst: " + v.worst);
        if (v.over) details.push_back(fmt("%d of %d rows over", v.over, v.rows));
        if (v.skipped) details.push_back(fmt("%d contended rows left out", v.skipped));
        for (size_t i = 0; i < details.size(); i++) std::printf("%s%s", i ? "; " : "  ", details[i].c_str());
        std::printf("\n");
    }
}

void Report::print_csv_blocks() const {
    if (!summary_.empty()) {
        std::printf("\ntable,pass,layout,dtype,rows,geomean_lib_plain,geomean_lib_kernel,max_lib_plain,max_row\n");
        for (const Summary &s : summary_)
            std::printf("summary,%s,%s,%s,%d,%s,%s,%s,%s\n", s.pass.c_str(), s.layout.c_str(), s.dtype.c_str(), s.rows,
                        csv_num(s.geo_plain).c_str(), csv_num(s.geo_kernel).c_str(), csv_num(s.max_plain).c_str(),
                        csv_cell(s.max_row).c_str());
    }
    for (const RatioTable &t : tables_) {
        std::printf("\ntable,problem,layout,pass,dtype,num_ms,den_ms,value,ctx_value,applies,verdict,info,note\n");
        for (const RatioRow &r : t.rows)
            std::printf("%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s\n", t.id.c_str(), r.problem.c_str(), r.layout.c_str(),
                        r.pass.c_str(), r.dtype.c_str(), r.num.ok ? csv_num(r.num.median).c_str() : "",
                        r.den.ok ? csv_num(r.den.median).c_str() : "", csv_num(value_of(t, r)).c_str(),
                        csv_num(ctx_of(t, r)).c_str(), int(r.applies), row_verdict(t, r).c_str(),
                        csv_cell(r.info).c_str(), csv_cell(r.note).c_str());
    }
    if (!verdicts_.empty()) {
        std::printf("\ntable,item,what,limit,value,status,worst,over,rows,contended_rows_left_out\n");
        for (const Verdict &v : verdicts_)
            std::printf("verdict,%d,%s,%s,%s,%s,%s,%d,%d,%d\n", v.item, csv_cell(v.what).c_str(), v.limit.c_str(),
                        v.value.c_str(), v.status.c_str(), csv_cell(v.worst).c_str(), v.over, v.rows, v.skipped);
    }
}

void Report::print_json(const Machine &m) const {
    Json j(stdout);
    j.begin(nullptr, '{');
    j.begin("machine", '{');
    j.str("cpu", m.cpu);
    j.str("isa", m.isa);
    j.integer("cores", m.cores);
    j.integer("threads", m.threads);
    j.boolean("bf16_supported", m.bf16);
    j.str("onednn_version", m.onednn_version);
    j.str("libdeconv_version", m.libdeconv_version);
    j.num("load_average_start", m.load_start);
    j.num("load_average_end", m.load_end);
    j.end('}');
    j.begin("run", '{');
    j.str("workloads", m.workloads);
    j.integer("n_workloads", m.n_workloads);
    j.num("budget_s", o_.budget);
    j.integer("repeat", o_.repeat);
    j.integer("max_reps", o_.max_reps);
    j.boolean("onednn", o_.onednn);
    j.boolean("variants", o_.variants);
    j.num("seconds", m.seconds);
    j.end('}');
    j.begin("check", '[');
    for (const CheckResult &c : checks_) {
        j.begin(nullptr, '{');
        j.str("pass", c.pass);
        j.str("dtype", c.dtype);
        j.str("layout", c.layout);
        j.num("max_rel_err", c.rel_err);
        j.num("tol", c.tol);
        j.boolean("ok", c.ok);
        if (!c.error.empty()) j.str("error", c.error);
        j.end('}');
    }
    j.end(']');
    j.begin("rows", '[');
    for (const Row &r : rows_) {
        j.begin(nullptr, '{');
        j.str("problem", r.problem);
        j.str("layout", r.layout);
        j.str("pass", r.pass);
        j.str("dtype", r.dtype);
        j.timing("lib", r.lib);
        j.timing("onednn_kernel", r.kernel);
        j.timing("onednn_plain", r.plain);
        j.num("gflops", r.lib.ok ? r.gflops : NAN);
        j.num("lib_plain", ratio(r.lib, r.plain));
        j.num("lib_kernel", ratio(r.lib, r.kernel));
        j.str("impl", r.impl);
        j.str("onednn_impl", r.dnn_impl);
        j.str("plain_reorders", r.reorders);
        j.num("load_average", r.load);
        j.boolean("noisy", noisy(r));
        j.num("preempted_share", preempted_share(r));
        j.boolean("contended", contended(r));
        if (!r.note.empty()) j.str("note", r.note);
        j.end('}');
    }
    j.end(']');
    j.begin("summary", '[');
    for (const Summary &s : summary_) {
        j.begin(nullptr, '{');
        j.str("pass", s.pass);
        j.str("layout", s.layout);
        j.str("dtype", s.dtype);
        j.integer("rows", s.rows);
        j.integer("contended_rows_left_out", s.contended);
        j.num("geomean_lib_plain", s.geo_plain);
        j.num("geomean_lib_kernel", s.geo_kernel);
        j.num("max_lib_plain", s.max_plain);
        j.str("max_row", s.max_row);
        j.end('}');
    }
    j.end(']');
    j.begin("tables", '[');
    for (const RatioTable &t : tables_) {
        j.begin(nullptr, '{');
        j.str("id", t.id);
        j.integer("item", t.item);
        j.str("title", t.title);
        j.str("explanation", t.explanation);
        j.str("num", t.num_name);
        j.str("den", t.den_name);
        j.str("value", t.value_name);
        j.str("ctx", t.ctx_name);
        j.boolean("difference_us", t.difference_us);
        j.num("limit", t.limit);
        j.begin("rows", '[');
        for (const RatioRow &r : t.rows) {
            j.begin(nullptr, '{');
            j.str("problem", r.problem);
            j.str("layout", r.layout);
            j.str("pass", r.pass);
            j.str("dtype", r.dtype);
            j.timing("num", r.num);
            j.timing("den", r.den);
            if (!t.ctx_name.empty()) {
                j.timing("ctx_num", r.ctx_num);
                j.timing("ctx_den", r.ctx_den);
            }
            j.num("value", value_of(t, r));
            j.num("ctx_value", ctx_of(t, r));
            j.boolean("applies", r.applies);
            j.str("verdict", row_verdict(t, r));
            if (!r.info.empty()) j.str("info", r.info);
            if (!r.note.empty()) j.str("note", r.note);
            j.end('}');
        }
        j.end(']');
        j.end('}');
    }
    j.end(']');
    j.begin("verdicts", '[');
    for (const Verdict &v : verdicts_) {
        j.begin(nullptr, '{');
        j.integer("item", v.item);
        j.str("what", v.what);
        j.str("limit", v.limit);
        j.str("value", v.value);
        j.str("status", v.status);
        j.str("worst", v.worst);
        j.integer("over", v.over);
        j.integer("rows", v.rows);
        j.integer("contended_rows_left_out", v.skipped);
        j.end('}');
    }
    j.end(']');
    j.end('}');
}

void Report::finish(const Machine &m) {
    std::stable_sort(tables_.begin(), tables_.end(),
                     [](const RatioTable &a, const RatioTable &b) { return a.item < b.item; });
    compute();
    if (o_.output == Output::JSON) print_json(m);
    else if (o_.output == Output::CSV) print_csv_blocks();
    else {
        print_summary();
        for (const RatioTable &t : tables_) print_table(t);
        print_verdicts();
    }
    std::fprintf(human(), "# %.0f s, load average %.2f at the end%s\n", m.seconds, m.load_end,
                                  m.load_end > m.threads + 0.5 ? " (includes this run's own threads; more means other work)" : "");
    std::fflush(stdout);
}

}  // namespace bench
