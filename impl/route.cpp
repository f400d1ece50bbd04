#include "route.hpp"

#include "error.hpp"
#include "execution.hpp"
#include "gemm_formulation.hpp"
#include "plan_building.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

namespace libdeconv {
namespace {

// A way to compute a pass: the data type of the primitive, its formulation and the data layout
// it is asked for.
struct Route {
    DataType compute;
    Formulation formulation;
    DataLayout data_layout;
    bool operator==(const Route &o) const {
        return compute == o.compute && formulation == o.formulation && data_layout == o.data_layout;
    }
};

// DECONV_BF16_COMPUTE=bf16|f32 and DECONV_FORMULATION=deconvolution|matmul narrow the
// candidates (tests, reproducibility); unset, every candidate that applies is considered.
std::vector<DataType> computes_allowed(DataType dtype) {
    if (dtype == DataType::f32) return {DataType::f32};
    static const char *pinned = std::getenv("DECONV_BF16_COMPUTE");
    if (pinned && std::strcmp(pinned, "bf16") == 0) return {DataType::bf16};
    if (pinned && std::strcmp(pinned, "f32") == 0) return {DataType::f32};
    return {DataType::bf16, DataType::f32};
}

// DECONV_DATA_LAYOUT=any|channels_first|channels_last pins the deconvolution's layout. Plain
// layouts only for f32 kernels: oneDNN 2.6's bf16 descriptor iterator crashes on some of them
// (bf16 backward data over 5136 output channels, channels-first: in the forward hint).
std::vector<DataLayout> data_layouts_allowed(DataType compute) {
    static const char *pinned = std::getenv("DECONV_DATA_LAYOUT");
    if (compute == DataType::bf16 || (pinned && std::strcmp(pinned, "any") == 0)) return {DataLayout::any};
    if (pinned && std::strcmp(pinned, "channels_first") == 0) return {DataLayout::channels_first};
    if (pinned && std::strcmp(pinned, "channels_last") == 0) return {DataLayout::channels_last};
    return {DataLayout::any, DataLayout::channels_first, DataLayout::channels_last};
}

std::vector<Formulation> formulations_allowed(const Problem &problem) {
    static const char *pinned = std::getenv("DECONV_FORMULATION");
    const bool matmul = is_matrix_product(problem);
    if (pinned && std::strcmp(pinned, "deconvolution") == 0) return {Formulation::deconvolution};
    if (pinned && std::strcmp(pinned, "matmul") == 0 && matmul) return {Formulation::matrix_product};
    if (matmul) return {Formulation::deconvolution, Formulation::matrix_product};
    return {Formulation::deconvolution};
}

// Best of a few runs on zero-filled caller-side buffers, conversions included.
double seconds_per_call(const Plan &plan) {
    std::vector<std::vector<char>> buffers;
    Tensors tensors;
    for (int i = 0; i < kMaxRoles; ++i) {
        if (!plan.roles[i].present) continue;
        buffers.emplace_back(plan.roles[i].conversion.user.get_size(), 0);
        tensors[i].user = buffers.back().data();
    }
    execute(plan, tensors); // warm-up: first touch of the workspace, code caches
    double best = 1e30;
    for (int run = 0; run < 2; ++run) {
        const auto start = std::chrono::steady_clock::now();
        execute(plan, tensors);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
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
    // The decision stored for `key`: `route` unless another thread decided first.
    Route remember(const std::vector<int64_t> &key, Route route) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto inserted = map_.emplace(key, route);
        if (!inserted.second) return inserted.first->second;
        order_.push_back(key);
        if (order_.size() > kCapacity) {
            map_.erase(order_.front());
            order_.pop_front();
        }
        return route;
    }

private:
    static constexpr size_t kCapacity = 65536; // about 100 bytes each
    std::mutex mutex_;
    std::map<std::vector<int64_t>, Route> map_;
    std::deque<std::vector<int64_t>> order_;
};

// Timing runs each candidate a few times on full-size buffers: only for problems where that is
// cheap next to creating the primitives. Larger ones take the first candidate without measuring.
bool worth_timing(const Problem &problem, const std::vector<std::shared_ptr<const Plan>> &plans) {
    size_t bytes = 0;
    for (const auto &plan : plans) bytes += plan->workspace_bytes;
    for (const Role &r : plans.front()->roles)
        if (r.present) bytes += r.conversion.user.get_size();
    constexpr double kMaxFlops = 2e10;              // tens of milliseconds per candidate run
    constexpr size_t kMaxBytes = size_t(512) << 20; // caller-size buffers plus the workspaces
    return problem.flops() <= kMaxFlops && bytes <= kMaxBytes;
}

Decisions &decisions() {
    static Decisions *d = new Decisions; // never destroyed: used until the process ends
    return *d;
}

std::shared_ptr<const Plan> build(const Problem &problem, Pass pass, Route route) {
    return std::make_shared<const Plan>(make_plan(problem, pass, route.compute, route.formulation, route.data_layout));
}

// The same kernel on the same layouts as an earlier candidate (e.g. a plain layout that format
// any picks anyway): nothing to measure.
bool same_computation(const Plan &a, const Plan &b) {
    if (a.impl != b.impl || a.compute != b.compute) return false;
    for (int i = 0; i < kMaxRoles; ++i) {
        if (a.roles[i].present != b.roles[i].present) return false;
        if (a.roles[i].present && a.roles[i].conversion.internal != b.roles[i].conversion.internal) return false;
    }
    return true;
}

// The fastest plan of `candidates` (in order of preference); throws the last error when none
// builds.
std::shared_ptr<const Plan> fastest_of(const Problem &problem, Pass pass, const std::vector<Route> &candidates) {
    if (candidates.size() == 1) return build(problem, pass, candidates.front());
    std::vector<int64_t> key = problem.signature();
    key.push_back(static_cast<int64_t>(pass));
    Route decided;
    if (decisions().find(key, decided)) return build(problem, pass, decided);

    std::vector<Route> routes;
    std::vector<std::shared_ptr<const Plan>> plans;
    for (size_t c = 0; c < candidates.size(); ++c) {
        // A problem too large to time takes the first candidate that builds: build no more.
        if (!plans.empty() && !worth_timing(problem, {plans.front()})) break;
        try {
            auto plan = build(problem, pass, candidates[c]);
            bool known = false;
            for (const auto &p : plans) known |= same_computation(*p, *plan);
            if (known) continue;
            plans.push_back(std::move(plan));
            routes.push_back(candidates[c]);
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
    if (usable.size() > 1 && worth_timing(problem, plans)) {
        // The preferred candidate keeps a near tie: within 3% the difference is noise.
        std::vector<double> seconds(plans.size(), 0.0);
        double best = 1e30;
        for (size_t i : usable) best = std::min(best, seconds[i] = seconds_per_call(*plans[i]));
        for (size_t i : usable)
            if (seconds[i] <= (i == usable.front() ? best / 0.97 : best)) {
                chosen = i;
                break;
            }
    }
    // Threads that measured the same new problem at once all take the first decision stored.
    const Route route = decisions().remember(key, routes[chosen]);
    for (size_t i = 0; i < plans.size(); ++i)
        if (routes[i] == route) return plans[i];
    return build(problem, pass, route);
}

} // namespace

std::shared_ptr<const Plan> make_fastest_plan(const Problem &problem, Pass pass) {
    // Candidates in order of preference: the problem's own data type first, oneDNN's
    // deconvolution first.
    std::vector<Route> candidates;
    for (DataType compute : computes_allowed(problem.spec().dtype))
        for (Formulation formulation : formulations_allowed(problem)) {
            if (formulation == Formulation::matrix_product) {
                candidates.push_back({compute, formulation, DataLayout::any});
                continue;
            }
            for (DataLayout layout : data_layouts_allowed(compute))
                candidates.push_back({compute, formulation, layout});
        }
    try {
        return fastest_of(problem, pass, candidates);
    } catch (const Error &e) {
        // A pinned bf16 compute still falls back to f32 where no bf16 kernel runs the problem.
        const bool bf16_only = candidates.front().compute == DataType::bf16 && candidates.back().compute == DataType::bf16;
        if (e.status() != Status::unsupported || !bf16_only) throw;
        for (Route &r : candidates) r.compute = DataType::f32;
        return fastest_of(problem, pass, candidates);
    }
}

} // namespace libdeconv
