// Alternating timing of several calls (see measure() in bench.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <random>

#include "bench.h"

namespace bench {
namespace {

// Time this process's threads spent runnable but waiting for a CPU (the run_delay field of
// /proc/self/task/*/schedstat, ns). It grows during a call when another process holds a core one
// of our threads needs: with OpenMP the call then waits at the next barrier for the scheduler
// (milliseconds), and times the scheduler rather than the code.
class RunDelay {
public:
    RunDelay() {  // after the warm-up, so the OpenMP threads exist
        if (DIR *d = opendir("/proc/self/task")) {
            while (dirent *e = readdir(d)) {
                if (e->d_name[0] == '.') continue;
                const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
                const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
                if (fd >= 0) fds_.push_back(fd);
            }
            closedir(d);
        }
    }
    ~RunDelay() {
        for (int fd : fds_) close(fd);
    }
    RunDelay(const RunDelay &) = delete;
    RunDelay &operator=(const RunDelay &) = delete;
    bool available() const { return !fds_.empty(); }
    long long ns() const {
        long long sum = 0;
        char b[128];
        for (int fd : fds_) {
            const ssize_t n = pread(fd, b, sizeof b - 1, 0);
            if (n <= 0) continue;
            b[n] = 0;
            char *end = nullptr;
            std::strtoull(b, &end, 10);  // time on the CPU
            sum += std::strtoll(end, nullptr, 10);
        }
        return sum;
    }

private:
    std::vector<int> fds_;
};

// Fallback without /proc: involuntary context switches of the process.
long preemptions() {
    rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_nivcsw : 0;
}

struct Sample {
    double ms;
    bool preempted;
};

// Median, quartiles and extremes of the calls that were not preempted when there are at least 5
// of them (or all calls were undisturbed; on a quiet machine: all of them), else of all calls.
void summarize(std::vector<Sample> &v, Timing &t) {
    std::vector<double> x;
    for (const Sample &s : v)
        if (!s.preempted) x.push_back(s.ms);
    t.preempted = int(v.size() - x.size());
    t.all_samples = x.size() < std::min<size_t>(5, v.size());
    if (t.all_samples) {
        x.clear();
        for (const Sample &s : v) x.push_back(s.ms);
    }
    std::sort(x.begin(), x.end());
    const size_t m = x.size();
    t.median = m % 2 ? x[m / 2] : 0.5 * (x[m / 2 - 1] + x[m / 2]);
    t.min = x.front();
    t.max = x.back();
    t.q1 = x[(m - 1) / 4];
    t.q3 = x[(3 * m) / 4 < m ? (3 * m) / 4 : m - 1];
    t.reps = int(v.size());
    t.ok = true;
}

}  // namespace

std::vector<Timing> measure(const std::vector<Call> &calls, const Options &o) {
    const size_t n = calls.size();
    std::vector<Timing> t(n);
    std::vector<std::vector<Sample>> samples(n);
    std::vector<int> clean(n, 0);
    std::vector<bool> live(n, true);
    double spent = 0;  // seconds of timed calls, all series
    std::unique_ptr<RunDelay> delay;
    // The probes sit outside the timed interval. A call counts as preempted when its threads
    // waited for a CPU for more than 10% of it plus 50 us: ordinary wake-ups of sleeping OpenMP
    // threads wait microseconds, a core held by another process costs milliseconds.
    auto run = [&](size_t i, bool &preempted) {
        const long long d0 = delay ? delay->ns() : 0;
        const long p0 = delay ? 0 : preemptions();
        const auto t0 = std::chrono::steady_clock::now();
        std::string err = calls[i]();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        preempted = delay ? double(delay->ns() - d0) > 0.1 * s * 1e9 + 50e3 : preemptions() != p0;
        if (!err.empty()) {
            t[i].error = err;
            live[i] = false;
        }
        return s;
    };
    bool ignored;
    for (size_t i = 0; i < n; i++)
        if (run(i, ignored) < 0.05 && live[i]) run(i, ignored);
    delay = std::make_unique<RunDelay>();
    if (!delay->available()) delay.reset();

    // Whole rounds only, so every series has the same number of calls, all interleaved. On a busy
    // machine the rounds go on (up to twice the budget) until every series has 5 calls
    // that were not preempted.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::mt19937 shuffler(12345);
    for (int round = 0;; round++) {
        const size_t alive = size_t(std::count(live.begin(), live.end(), true));
        if (alive == 0) break;
        bool enough_clean = true;
        for (size_t i = 0; i < n; i++) enough_clean &= !live[i] || clean[i] >= 5;
        const double budget = o.budget * double(alive);
        if (o.repeat ? round >= o.repeat
                     : round >= o.max_reps ||
                           (round >= 5 && spent >= budget && (enough_clean || spent >= 2 * budget)))
            break;
        // A new order every round (a fixed seed: runs repeat), so that no series always runs
        // right after the same one. Series on the same buffers and scratchpad (onednn_kernel and
        // onednn_plain) would otherwise always find them warm in the cache after the other
        // (measured: hifigan.up1 bwd_weights f32 plain 20% faster than the same primitive as kernel).
        std::shuffle(order.begin(), order.end(), shuffler);
        for (size_t i : order) {
            if (!live[i]) continue;
            bool preempted = false;
            const double s = run(i, preempted);
            if (!live[i]) continue;
            samples[i].push_back({s * 1e3, preempted});
            clean[i] += !preempted;
            spent += s;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (live[i] && !samples[i].empty()) summarize(samples[i], t[i]);
    return t;
}

}  // namespace bench
