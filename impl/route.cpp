#include "route.hpp"

#include "error.hpp"
#include "execution.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

namespace libdeconv {
namespace {

enum class Choice { automatic, bf16, f32 };

Choice choice_from_environment() {
    const char *text = std::getenv("DECONV_BF16_COMPUTE");
    if (text && std::strcmp(text, "bf16") == 0) return Choice::bf16;
    if (text && std::strcmp(text, "f32") == 0) return Choice::f32;
    return Choice::automatic;
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
    bool find(const std::vector<int64_t> &key, DataType &type) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it == map_.end()) return false;
        type = it->second;
        return true;
    }
    // The decision stored for `key`: `type` unless another thread decided first.
    DataType remember(const std::vector<int64_t> &key, DataType type) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto inserted = map_.emplace(key, type);
        if (!inserted.second) return inserted.first->second;
        order_.push_back(key);
        if (order_.size() > kCapacity) {
            map_.erase(order_.front());
            order_.pop_front();
        }
        return type;
    }

private:
    static constexpr size_t kCapacity = 65536; // about 100 bytes each
    std::mutex mutex_;
    std::map<std::vector<int64_t>, DataType> map_;
    std::deque<std::vector<int64_t>> order_;
};

bool is_reference(const Plan &plan) { return plan.impl.rfind("ref", 0) == 0; }

// Timing runs each candidate a few times on full-size buffers: only for problems where that is
// cheap next to creating the primitives. Larger ones take the native kernel without measuring.
bool worth_timing(const Problem &problem, const Plan &a, const Plan &b) {
    const double flops = problem.flops();
    size_t bytes = a.workspace_bytes + b.workspace_bytes;
    for (const Role &r : a.roles)
        if (r.present) bytes += r.conversion.user.get_size();
    constexpr double kMaxFlops = 2e10;              // tens of milliseconds per candidate run
    constexpr size_t kMaxBytes = size_t(512) << 20; // caller-size buffers plus both workspaces
    return flops <= kMaxFlops && bytes <= kMaxBytes;
}

Decisions &decisions() {
    static Decisions *d = new Decisions; // never destroyed: used until the process ends
    return *d;
}

} // namespace

std::shared_ptr<const Plan> make_fastest_plan(const Problem &problem, Pass pass) {
    const DataType type = problem.spec().dtype;
    static const Choice choice = choice_from_environment();
    if (type == DataType::f32 || choice == Choice::bf16)
        return std::make_shared<const Plan>(make_plan(problem, pass, type));
    if (choice == Choice::f32) return std::make_shared<const Plan>(make_plan(problem, pass, DataType::f32));
    std::vector<int64_t> key = problem.signature();
    key.push_back(static_cast<int64_t>(pass));
    DataType decided;
    if (decisions().find(key, decided)) return std::make_shared<const Plan>(make_plan(problem, pass, decided));
    auto widened = std::make_shared<const Plan>(make_plan(problem, pass, DataType::f32));
    std::shared_ptr<const Plan> native;
    try {
        native = std::make_shared<const Plan>(make_plan(problem, pass, DataType::bf16));
    } catch (const Error &e) { // no bf16 kernel builds for this geometry: f32 does the work
        if (e.status() != Status::unsupported) throw;
        decisions().remember(key, DataType::f32);
        return widened;
    }
    // A reference kernel is never timed (it can take minutes): the route with a real kernel
    // wins, native when neither has one. Native keeps a near tie: within 3% the difference is noise. Threads that measured the
    // same new problem at once all take the first decision stored.
    bool f32_wins;
    if (is_reference(*native) || is_reference(*widened))
        f32_wins = is_reference(*native) && !is_reference(*widened);
    else if (!worth_timing(problem, *native, *widened))
        f32_wins = false;
    else
        f32_wins = seconds_per_call(*widened) < 0.97 * seconds_per_call(*native);
    return decisions().remember(key, f32_wins ? DataType::f32 : DataType::bf16) == DataType::f32 ? widened : native;
}

} // namespace libdeconv
