#include "route.hpp"

#include "bias_gradient.hpp"
#include "cpu_wait.hpp"
#include "depthwise_formulation.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "execution.hpp"
#include "gemm_formulation.hpp"
#include "plan_building.hpp"
#include "subpixel_formulation.hpp"
#include "weights.hpp"
#include "workspace.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cpuid.h>
#include <deque>
#include <immintrin.h>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace libdeconv {
namespace {

// A way to compute a pass: the data type of the primitive, its formulation, the data layout it
// is asked for and the number of batch chunks it runs in (Plan::batch_chunks).
struct Route {
    DataType compute;
    Formulation formulation;
    DataLayout data_layout;
    int64_t batch_chunks = 1;
    size_t input_shift = 0; // where the inputs' internal copies start past a cache line (may_shift_inputs)
    bool operator==(const Route &o) const {
        return compute == o.compute && formulation == o.formulation && data_layout == o.data_layout
                && batch_chunks == o.batch_chunks && input_shift == o.input_shift;
    }
};

// DECONV_BF16_COMPUTE=bf16|f32, DECONV_FORMULATION=deconvolution|matmul|subpixel and
// DECONV_DATA_LAYOUT narrow the candidates (tests, reproducibility); unset, every candidate that
// applies is considered.
std::vector<DataType> computes_allowed(DataType dtype) {
    // Without oneDNN's bf16 kernels (no AVX-512), in f32 on converted buffers, pinned or not.
    if (dtype == DataType::f32 || !onednn_has_bf16_kernels()) return {DataType::f32};
    static const char *pinned = std::getenv("DECONV_BF16_COMPUTE");
    if (pinned && std::strcmp(pinned, "bf16") == 0) return {DataType::bf16};
    if (pinned && std::strcmp(pinned, "f32") == 0) return {DataType::f32};
    return {DataType::bf16, DataType::f32};
}

// DECONV_DATA_LAYOUT=any|channels_first|channels_last pins the deconvolution's layout. bf16
// kernels never on channels-first: oneDNN 2.6's bf16 descriptor iterator crashes on some of
// those (bf16 backward data over 5136 output channels, channels-first: in the forward hint).
// Channels-last is where oneDNN 2.6 has its brgemm bf16 kernels (a 3x3 depthwise
// backward data, channels-last: brdgmm_dw 0.50 ms against jit_dw on channel blocks 0.88).
std::vector<DataLayout> data_layouts_allowed(DataType compute) {
    static const char *pinned = std::getenv("DECONV_DATA_LAYOUT");
    const bool bf16 = compute == DataType::bf16;
    if (pinned && std::strcmp(pinned, "any") == 0) return {DataLayout::any};
    if (pinned && std::strcmp(pinned, "channels_first") == 0)
        return {bf16 ? DataLayout::any : DataLayout::channels_first};
    if (pinned && std::strcmp(pinned, "channels_last") == 0) return {DataLayout::channels_last};
    if (bf16) return {DataLayout::any, DataLayout::channels_last};
    return {DataLayout::any, DataLayout::channels_first, DataLayout::channels_last};
}

// The subpixel convolution's output channels-last (any) or channels-first; the latter only for
// an f32 forward, where it is x64:gemm:jit on the caller's channels-first input (in bf16 that
// kernel is 5-30x slower). DECONV_DATA_LAYOUT=channels_first pins it (a weight gradient then
// has no subpixel candidate), the other values channels-last.
std::vector<DataLayout> subpixel_layouts_allowed(DataType compute, Pass pass) {
    static const char *pinned = std::getenv("DECONV_DATA_LAYOUT");
    if (pinned && std::strcmp(pinned, "channels_first") == 0) return {DataLayout::channels_first};
    if (pinned || compute == DataType::bf16 || pass != Pass::forward) return {DataLayout::any};
    return {DataLayout::any, DataLayout::channels_first};
}

// The depthwise kernels on channels-last copies (any), or on the caller's channels-first data as
// it is, plane by plane (weight gradient of mobile.dw: f32 2.7-2.9 ms against 3.0-3.2 on
// copies, bf16 2.1-2.3 against 2.0-2.2): timing chooses. DECONV_DATA_LAYOUT=channels_first or
// channels_last pins one of the two. The data gradient also on channels-first copies of
// channels-last data, the caller's own layout first.
std::vector<DataLayout> depthwise_layouts_allowed(const Problem &problem, Pass pass) {
    static const char *pinned = std::getenv("DECONV_DATA_LAYOUT");
    const bool channels_last = problem.spec().layout != Layout::channels_first;
    if (channels_last && pass != Pass::backward_data) return {DataLayout::any};
    if (pinned && std::strcmp(pinned, "channels_first") == 0) return {DataLayout::channels_first};
    if (pinned && std::strcmp(pinned, "channels_last") == 0) return {DataLayout::any};
    if (channels_last) return {DataLayout::any, DataLayout::channels_first};
    if (pass == Pass::backward_data) return {DataLayout::channels_first, DataLayout::any};
    return {DataLayout::any, DataLayout::channels_first};
}

// The batch chunks a forward or backward-data pass may run in: as many as make a chunk of its
// larger tensor, input or output, about kChunkBytes (in the f32 a kernel may compute in), where
// the whole tensor is several times that and the weights, read again for every chunk, are small
// next to a chunk; preferred to the whole batch in a tie, as an add request then adds from cache
// (dcgan.l5 backward data f32, 64 images in 8 chunks: add 2.9-3.4 ms against 3.6-4.3 in one
// piece, write alike), a converted input is read from cache (bilinear.dw backward data bf16 on
// AVX2, its 26 MB input gradient in f32 copies: 2.4 ms in 8 chunks against 4.3 in one piece)
// and the workspace holds a chunk. DECONV_BATCH_CHUNKS=n pins n chunks (1: none) where n
// divides the batch.
std::vector<int64_t> batch_chunks_allowed(const Problem &problem, Pass pass) {
    static const char *pinned = std::getenv("DECONV_BATCH_CHUNKS");
    const int64_t batch = problem.spec().batch;
    if (pass == Pass::backward_weights) return {1};
    if (pinned) {
        const int64_t n = std::atoll(pinned);
        return {n > 0 && batch % n == 0 ? n : 1};
    }
    constexpr double kChunkBytes = 2 << 20;
    constexpr int64_t kMaxChunks = 64; // each a run of the kernel, with its fork and join
    const double tensor_bytes = 4.0 * std::max(problem.src_elems(), problem.dst_elems());
    const double weights_bytes = 4.0 * problem.weights_elems();
    if (batch < 2 || tensor_bytes < 4 * kChunkBytes) return {1};
    // The fewest chunks that divide the batch and are no larger than kChunkBytes, or single
    // images.
    int64_t n = std::min(batch, static_cast<int64_t>(std::ceil(tensor_bytes / kChunkBytes)));
    while (batch % n != 0 && n < kMaxChunks) ++n;
    if (batch % n != 0 || weights_bytes * 4 > tensor_bytes / n) return {1};
    return {n, 1};
}

std::vector<Formulation> formulations_allowed(const Problem &problem, Pass pass) {
    static const char *pinned = std::getenv("DECONV_FORMULATION");
    std::vector<Formulation> allowed{Formulation::deconvolution};
    if (is_matrix_product(problem)) allowed.push_back(Formulation::matrix_product);
    if (pass != Pass::backward_data && is_subpixel_candidate(problem)) allowed.push_back(Formulation::subpixel);
    if (is_depthwise_candidate(problem, pass)) allowed.push_back(Formulation::depthwise);
    if (is_patches_candidate(problem, pass)) allowed.push_back(Formulation::patches);
    static const std::pair<const char *, Formulation> names[] = {{"deconvolution", Formulation::deconvolution},
            {"matmul", Formulation::matrix_product}, {"subpixel", Formulation::subpixel},
            {"depthwise", Formulation::depthwise}, {"patches", Formulation::patches}};
    for (const auto &name : names)
        if (pinned && std::strcmp(pinned, name.first) == 0)
            return std::find(allowed.begin(), allowed.end(), name.second) != allowed.end()
                           ? std::vector<Formulation>{name.second}
                           : std::vector<Formulation>{Formulation::deconvolution};
    return allowed;
}

// Zero-filled caller-side buffers, one per role, shared by all candidates of a problem: the
// candidates then find them in the cache alike, as repeated calls of one handle do.
using CallerBuffers = std::array<std::vector<char>, kMaxRoles>;

// `bytes` from `p` out of every cache level, written back where changed. Candidates are timed
// on tensors out of the cache, as in a network, where other layers run between two calls of a
// layer (and as deconv-bench times them): timed warm, a route that makes a second pass over a
// 17 MB output (hifigan.up1 f32 with a bias: x64:gemm:jit, the bias added in place) tied with
// one that does not, and took 6.7 ms a call against 5.6 ms cold.
__attribute__((target("clflushopt"))) void evict_lines(const char *p, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 64) _mm_clflushopt(const_cast<char *>(p + i));
}
bool has_clflushopt() { // CPUID leaf 7, EBX bit 23 (clang 14 has no "clflushopt" for __builtin_cpu_supports)
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}
void evict(const void *p, size_t bytes) {
    static const bool optimized = has_clflushopt();
    const char *from = static_cast<const char *>(p);
    if (optimized)
        evict_lines(from, bytes);
    else
        for (size_t i = 0; i < bytes; i += 64) _mm_clflush(from + i);
    _mm_mfence();
}

// One candidate run on the caller-side buffers, conversions included; an inference forward on
// weights packed once, as after deconv_set_weights (the subpixel formulation's weights take a
// split and a reorder per call otherwise: 2-3 ms on hifigan.up1).
class Trial {
public:
    Trial(const Plan &plan, const Problem &problem, CallerBuffers &buffers) : plan_(plan) {
        for (int i = 0; i < kMaxRoles; ++i) {
            if (!plan.roles[i].present) continue;
            const size_t bytes = caller_bytes(plan, i);
            if (buffers[i].size() < bytes) buffers[i].resize(bytes, 0);
        }
        if (plan.pass == Pass::forward && problem.spec().mode == Mode::inference)
            packed_ = pack_weights(plan, buffers[role::fwd_weights].data(), buffers[role::fwd_bias].data());
        // A weight gradient whose plan leaves the bias gradient to the reduction apart is timed
        // with it, as the plans that compute both (Deconvolution::backward) are.
        if (plan.pass == Pass::backward_weights && problem.spec().bias
                && !plan.roles[role::bwd_weights_diff_bias].present) {
            bias_apart_ = &problem.spec();
            bias_pixels_ = problem.dst_elems() / (problem.spec().batch * problem.spec().out_channels);
            bias_out_.resize(static_cast<size_t>(problem.spec().out_channels) * 4);
            bias_gradient_scratch(problem.spec());
        }
    }
    // After every candidate's constructor, so that the buffers no longer move.
    double seconds(const CallerBuffers &buffers) const {
        Tensors tensors;
        for (int i = 0; i < kMaxRoles; ++i)
            if (plan_.roles[i].present) tensors[i].user = buffers[i].data();
        if (packed_) {
            tensors[role::fwd_weights] = Tensor{nullptr, &packed_->weights};
            if (plan_.roles[role::fwd_bias].present) tensors[role::fwd_bias] = Tensor{nullptr, &packed_->bias};
        }
        for (int i = 0; i < kMaxRoles; ++i)
            if (plan_.roles[i].present) evict(buffers[i].data(), caller_bytes(plan_, i));
        if (packed_) {
            evict(packed_->weights.get_data_handle(), packed_->weights.get_desc().get_size());
            if (packed_->bias) evict(packed_->bias.get_data_handle(), packed_->bias.get_desc().get_size());
        }
        evict(thread_workspace(plan_.workspace_bytes), plan_.workspace_bytes);
        const auto start = std::chrono::steady_clock::now();
        execute(plan_, tensors);
        if (bias_apart_)
            reduce_bias_gradient(*bias_apart_, bias_pixels_, buffers[role::bwd_weights_diff_dst].data(),
                    bias_out_.data(), Req::write, bias_gradient_scratch(*bias_apart_));
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

private:
    const Plan &plan_;
    std::shared_ptr<const PackedWeights> packed_;
    const Spec *bias_apart_ = nullptr; // the problem, where its bias gradient is reduced apart
    int64_t bias_pixels_ = 0;
    mutable std::vector<char> bias_out_;
};

// The best of a few runs of each plan, taken in turns so that a slower moment of the machine
// is shared out rather than charged to one candidate. A run during which the threads waited for
// a CPU measured another process more than the candidate: it is taken again (held-out
// grouped.g4 backward data f32 on a busy machine: one turn of the channel-blocked kernel took
// 13 ms against 7 ms in another, and the channels-last brgconv chosen in such runs is 1.5x
// slower in the bench). Calls of microseconds are repeated up to about 0.1 ms per turn: two of
// them alone decide by noise (tiny.latency's bias route).
std::vector<double> seconds_per_call(const Problem &problem, const std::vector<const Plan *> &plans) {
    CallerBuffers buffers;
    std::vector<Trial> trials;
    for (const Plan *plan : plans) trials.emplace_back(*plan, problem, buffers);
    std::vector<int> repeats;
    for (const Trial &t : trials) { // warm-up: first touch of the workspace, code caches
        constexpr double kTurnSeconds = 1e-4;
        repeats.push_back(static_cast<int>(std::clamp(kTurnSeconds / t.seconds(buffers), 1.0, 50.0)));
    }
    const CpuWait waits;                                      // after the warm-up: the OpenMP team exists
    int retakes_left = 2 * static_cast<int>(trials.size()); // a machine busy throughout: runs as they come
    std::vector<double> best(trials.size(), 1e30);
    // Two turns each, then two more for the candidates within kContenders of the best so far:
    // two turns of a 40-60 ms call on a noisy machine left dcgan.l2's weight gradient on a route
    // 1.2x slower in the bench in one of two runs.
    constexpr int kTurns = 2, kContenderTurns = 2;
    constexpr double kContenders = 1.25;
    for (int round = 0; round < kTurns + kContenderTurns; ++round)
        for (size_t i = 0; i < trials.size(); ++i) {
            if (round >= kTurns && best[i] > kContenders * *std::min_element(best.begin(), best.end())) continue;
            for (int r = 0; r < repeats[i]; ++r) {
                const long long waited_before = waits.nanoseconds();
                const double s = trials[i].seconds(buffers);
                if (CpuWait::disturbed(s, waits.nanoseconds() - waited_before) && retakes_left > 0) {
                    --retakes_left;
                    --r;
                    continue;
                }
                best[i] = std::min(best[i], s);
            }
        }
    return best;
}

// Routes once measured, so that a problem keeps its route (and its exact results) when its plan
// is evicted and made again. Bounded; the oldest decisions are forgotten first.
class Decisions {
public:
    bool find(const std::vector<int64_t> &key, Route &route) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it == map_.end()) return false;
        route = it->second;
        return true;
    }
    // Called under measurement_mutex() after find() failed: no other thread decides `key`.
    void remember(const std::vector<int64_t> &key, Route route) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!map_.emplace(key, route).second) return;
        order_.push_back(key);
        if (order_.size() > kCapacity) {
            map_.erase(order_.front());
            order_.pop_front();
        }
    }

private:
    static constexpr size_t kCapacity = 65536; // about 100 bytes each
    std::mutex mutex_;
    std::map<std::vector<int64_t>, Route> map_;
    std::deque<std::vector<int64_t>> order_;
};

// Timing runs each candidate a few times on full-size buffers: only for problems where that is
// cheap next to creating the primitives. Larger ones take the first candidate without measuring.
// The memory timing takes: the caller-side buffers (shared by the candidates), the thread's one
// workspace (grown to the largest candidate's, not one per candidate: summed, unet.up2's 20
// candidates with a bias passed the bound and the first one was taken untimed, 1.2-1.3x slower
// than the others' pick) and a packed copy of the weights per candidate of an inference forward.
bool worth_timing(const Problem &problem, const std::vector<std::shared_ptr<const Plan>> &plans) {
    size_t workspace = 0;
    for (const auto &plan : plans) workspace = std::max(workspace, plan->workspace_bytes);
    size_t bytes = workspace;
    const Plan &first = *plans.front();
    for (int i = 0; i < kMaxRoles; ++i)
        if (first.roles[i].present) bytes += caller_bytes(first, i);
    if (first.pass == Pass::forward && problem.spec().mode == Mode::inference)
        bytes += plans.size() * caller_bytes(first, role::fwd_weights);
    constexpr double kMaxFlops = 2e10;              // tens of milliseconds per candidate run
    constexpr size_t kMaxBytes = size_t(512) << 20;
    return problem.flops() <= kMaxFlops && bytes <= kMaxBytes;
}

// DECONV_ROUTE_TIMING=off: every candidate is built, none is timed, and the first with a real
// kernel is taken: for tests that check what builds, not what is fast (the standard workloads'
// handles took 430 of the release suite's 960 s timing candidates), or one route whatever the
// machine's load.
bool route_timing_off() {
    static const char *timing = std::getenv("DECONV_ROUTE_TIMING");
    return timing && std::strcmp(timing, "off") == 0;
}

Decisions &decisions() {
    static Decisions *d = new Decisions; // never destroyed: used until the process ends
    return *d;
}

std::mutex &measurement_mutex() {
    static std::mutex *m = new std::mutex; // never destroyed, as decisions()
    return *m;
}

std::shared_ptr<const Plan> build(const Problem &problem, Pass pass, Route route) {
    if (route.batch_chunks == 1) {
        const Plan plan = make_plan(problem, pass, route.compute, route.formulation, route.data_layout);
        return std::make_shared<const Plan>(route.input_shift ? with_input_shift(plan, route.input_shift) : plan);
    }
    Spec part = problem.spec();
    part.batch /= route.batch_chunks;
    const Problem chunk(part);
    Plan plan = make_plan(chunk, pass, route.compute, route.formulation, route.data_layout);
    plan.batch_chunks = route.batch_chunks;
    plan.impl += " (batch in " + std::to_string(route.batch_chunks) + " chunks)";
    if (route.input_shift) plan = with_input_shift(plan, route.input_shift);
    const size_t src_bytes = chunk.src_elems() * chunk.element_bytes(), dst_bytes = chunk.dst_elems() * chunk.element_bytes();
    const bool forward = pass == Pass::forward;
    plan.roles[forward ? role::fwd_src : role::bwd_data_diff_dst].chunk_bytes = forward ? src_bytes : dst_bytes;
    Role &output = plan.roles[forward ? role::fwd_dst : role::bwd_data_diff_src];
    output.chunk_bytes = forward ? dst_bytes : src_bytes;
    output.commit.batch_chunks = route.batch_chunks;
    if (output.phases) {
        auto phases = std::make_shared<PhaseSplit>(*output.phases);
        phases->batch_chunks = route.batch_chunks;
        output.phases = std::move(phases);
    }
    return std::make_shared<const Plan>(std::move(plan));
}

// Bytes past a cache line of the shifted input copies: where malloc's large blocks start.
constexpr size_t kShiftedInputs = 16;

// The input placements a plan is timed with (may_shift_inputs), for problems of 5e7 to 1e9
// FLOPs, where the shifted copies were faster (dcgan.l1 1e8, dcgan.l5 4e8; on the caller's
// buffers fcn8s.upscore8 9e8 too). Larger ones, whose sgemm is compute-bound, ran alike or
// faster aligned (hifigan.up1 2e9, unet.up2 4e9), and timing a second candidate there made
// the workload tests 20-30% slower; smaller ones alike. DECONV_INPUT_SHIFT=0 keeps the copies on
// cache lines, =16 takes them shifted wherever that is offered, whatever the size (tests).
std::vector<size_t> input_shifts_allowed(const Problem &problem, const Plan &plan) {
    static const char *pinned = std::getenv("DECONV_INPUT_SHIFT");
    constexpr double kMinFlops = 5e7, kMaxFlops = 1e9;
    if (!may_shift_inputs(plan) || (pinned && std::strcmp(pinned, "0") == 0)) return {0};
    if (pinned && std::strcmp(pinned, "16") == 0) return {kShiftedInputs};
    if (problem.flops() < kMinFlops || problem.flops() > kMaxFlops) return {0};
    return {0, kShiftedInputs};
}

// The same kernel on the same layouts as an earlier candidate (e.g. a plain layout that format
// any picks anyway): nothing to measure.
bool same_computation(const Plan &a, const Plan &b) {
    if (a.impl != b.impl || a.compute != b.compute || a.batch_chunks != b.batch_chunks || a.input_shift != b.input_shift)
        return false;
    for (int i = 0; i < kMaxRoles; ++i) {
        if (a.roles[i].present != b.roles[i].present) return false;
        if (a.roles[i].present && a.roles[i].conversion.internal != b.roles[i].conversion.internal) return false;
    }
    return true;
}

// A plan over batch chunks that copies none of the data it splits (a kernel on the caller's
// buffers, adding into them itself): the chunks keep nothing in cache and only add runs of the
// kernel (depthwise data gradient of mobile.dw f32, 8 chunks: 1.44-1.47 ms against 1.31 in one
// piece). Not measured where the same route in one piece is a candidate too.
bool chunks_without_copies(const Plan &plan) {
    if (plan.batch_chunks == 1) return false;
    const bool adds_in_place = plan.accumulating || plan.depthwise; // else an add request's copy
    for (const Role &r : plan.roles)
        if (r.present && r.chunk_bytes && (!r.conversion.identical || (r.output && !adds_in_place))) return false;
    return true;
}

std::vector<int64_t> decision_key(const Problem &problem, Pass pass) {
    std::vector<int64_t> key = problem.signature();
    key.push_back(static_cast<int64_t>(pass));
    return key;
}

// The same problem with the bias flipped: its route, when one was measured already.
bool twin_route(const Problem &problem, Pass pass, Route &route) {
    Spec twin = problem.spec();
    twin.bias = !twin.bias;
    return decisions().find(decision_key(Problem(twin), pass), route);
}

// The fastest plan of `candidates` (in order of preference); throws the last error when none
// builds.
std::shared_ptr<const Plan> fastest_of(const Problem &problem, Pass pass, const std::vector<Route> &candidates) {
    if (candidates.size() == 1) return build(problem, pass, candidates.front());
    const std::vector<int64_t> key = decision_key(problem, pass);
    Route decided;
    if (decisions().find(key, decided)) return build(problem, pass, decided);
    // One measurement at a time in the process: candidates timed while another thread times its
    // own share the cores and caches and decide by that; threads creating handles of one new
    // problem at once wait for the first one's decision instead of each building every
    // candidate.
    std::lock_guard<std::mutex> measuring(measurement_mutex());
    if (decisions().find(key, decided)) return build(problem, pass, decided);

    std::vector<Route> routes;
    std::vector<std::shared_ptr<const Plan>> plans;
    for (size_t c = 0; c < candidates.size(); ++c) {
        // A problem too large to time takes the first candidate that builds: build no more.
        if (!plans.empty() && !worth_timing(problem, {plans.front()})) break;
        try {
            auto plan = build(problem, pass, candidates[c]);
            Route whole = candidates[c];
            whole.batch_chunks = 1;
            if (chunks_without_copies(*plan) && std::count(candidates.begin(), candidates.end(), whole)) continue;
            bool known = false;
            for (const auto &p : plans) known |= same_computation(*p, *plan);
            if (known) continue;
            // Each placement of its input copies, on the lines first.
            for (size_t shift : input_shifts_allowed(problem, *plan)) {
                Route placed = candidates[c];
                placed.input_shift = shift;
                plans.push_back(shift == 0 ? plan : std::make_shared<const Plan>(with_input_shift(*plan, shift)));
                routes.push_back(placed);
            }
        } catch (const Error &e) { // e.g. no bf16 kernel builds for this geometry: others do the work
            if (e.status() != Status::unsupported || (plans.empty() && c + 1 == candidates.size())) throw;
        }
    }
    // A reference kernel is never timed (it can take minutes) nor chosen while a real kernel
    // runs the problem.
    std::vector<size_t> usable;
    for (size_t i = 0; i < plans.size(); ++i)
        if (!is_reference(plans[i]->impl)) usable.push_back(i);
    size_t chosen = usable.empty() ? 0 : usable.front();
    if (usable.size() > 1 && !route_timing_off() && worth_timing(problem, plans)) {
        // Within 3% the difference is noise: a near tie goes to the preferred candidate; a route
        // over batch chunks is taken within 5% (batch_chunks_allowed: what it saves an add
        // request is worth more than the noise it may lose to a write). The route the problem's
        // twin with (or without) a bias took counts as a tie within 10%, so that a bias costs
        // what it adds to one route rather than the noise between two (bench: bias/no-bias
        // 1.06-1.45 on routes within 5% of each other; unet.up1 f32: two routes timed here at
        // 11.2 and 11.5 ms, in the bench's cold calls 10 and 12 ms, and the bias and no-bias
        // handles took either).
        std::vector<const Plan *> timed;
        for (size_t i : usable) timed.push_back(plans[i].get());
        const std::vector<double> seconds = seconds_per_call(problem, timed);
        const double best = *std::min_element(seconds.begin(), seconds.end());
        Route twin;
        const bool has_twin = twin_route(problem, pass, twin);
        size_t tie = usable.size();
        for (size_t k = 0; k < usable.size(); ++k)
            if (has_twin && routes[usable[k]] == twin && seconds[k] <= best * 1.10) tie = k;
        for (size_t k = 0; k < usable.size() && tie == usable.size(); ++k) {
            const double margin = routes[usable[k]].batch_chunks > 1 ? 1.05 : k == 0 ? 1 / 0.97 : 1.0;
            if (seconds[k] <= best * margin) tie = k;
        }
        chosen = usable[tie];
    }
    decisions().remember(key, routes[chosen]);
    return plans[chosen];
}

} // namespace

std::shared_ptr<const Plan> make_fastest_plan(const Problem &problem, Pass pass) {
    // Candidates in order of preference: the problem's own data type first, oneDNN's
    // deconvolution first.
    std::vector<Route> candidates;
    for (int64_t batch_chunks : batch_chunks_allowed(problem, pass)) {
        for (DataType compute : computes_allowed(problem.spec().dtype))
            for (Formulation formulation : formulations_allowed(problem, pass)) {
                if (formulation == Formulation::matrix_product || formulation == Formulation::depthwise
                        || formulation == Formulation::patches) {
                    const auto layouts = formulation == Formulation::depthwise
                            ? depthwise_layouts_allowed(problem, pass)
                            : std::vector<DataLayout>{DataLayout::any};
                    for (DataLayout layout : layouts) candidates.push_back({compute, formulation, layout, batch_chunks});
                    continue;
                }
                if (formulation == Formulation::subpixel) {
                    for (DataLayout layout : subpixel_layouts_allowed(compute, pass))
                        candidates.push_back({compute, formulation, layout, batch_chunks});
                    continue;
                }
                for (DataLayout layout : data_layouts_allowed(compute))
                    candidates.push_back({compute, formulation, layout, batch_chunks});
            }
    }
    try {
        return fastest_of(problem, pass, candidates);
    } catch (const Error &e) {
        if (e.status() != Status::unsupported) throw;
        // A pinned route falls back where it cannot run the problem: a bf16 compute to f32, a
        // formulation to oneDNN's deconvolution.
        auto all = [&](auto predicate) { return std::all_of(candidates.begin(), candidates.end(), predicate); };
        const bool bf16_only = all([](const Route &r) { return r.compute == DataType::bf16; });
        const bool other_formulation = all([](const Route &r) { return r.formulation != Formulation::deconvolution; });
        if (!bf16_only && !other_formulation) throw;
        std::vector<Route> fallback;
        for (Route r : candidates) {
            if (bf16_only) r.compute = DataType::f32;
            if (other_formulation) r = {r.compute, Formulation::deconvolution, DataLayout::any, r.batch_chunks};
            if (std::find(fallback.begin(), fallback.end(), r) == fallback.end()) fallback.push_back(r);
        }
        return fastest_of(problem, pass, fallback);
    }
}

} // namespace libdeconv
