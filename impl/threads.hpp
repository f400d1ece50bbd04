// How many OpenMP threads a plan uses. oneDNN fixes a primitive's thread count when it is
// created (and its reorders read the calling thread's count when they run), so a plan built and
// run under SingleThreaded stays on the calling thread.
#pragma once

#include "problem.hpp"

#include <omp.h>

namespace libdeconv {

// Problems this small run faster on the calling thread alone: forking and joining a parallel
// region takes microseconds, more than splitting their work saves.
bool runs_single_threaded(const Problem &problem);

// Throws Error(unsupported) naming `function` when called inside an OpenMP parallel region of
// the caller, unless the problem runs single-threaded: oneDNN 2.6 runs a primitive there on one
// thread whatever count it was built for, and a kernel that split its work for two then
// computes part of it (a weight gradient half written) or waits for a thread that never comes.
void refuse_inside_callers_region(const Problem &problem, const char *function);

// Limits the calling thread's OpenMP regions to one thread while alive (when `active`).
class SingleThreaded {
public:
    explicit SingleThreaded(bool active);
    ~SingleThreaded();
    SingleThreaded(const SingleThreaded &) = delete;
    SingleThreaded &operator=(const SingleThreaded &) = delete;

private:
    int saved_ = 0; // 0: not active
};

// body() on a team of OpenMP threads (`threads`, or as many as a region gets) when `parallel`,
// its loops shared out by `#pragma omp for`; else on the calling thread alone, where such a loop
// runs whole. Not a region with a false `if` clause: libgomp still makes a team for that, a
// 1.5 KB allocation and a free (about 0.3 us a region: tiny.latency forward 2.4 -> 1.5 us).
// Called from within the caller's own region, body() runs in a region of its own all the same:
// a loop outside any region of ours would be shared out over the caller's team.
template <typename F>
void in_parallel(bool parallel, F &&body, int threads = 0) {
    const bool alone = !parallel || threads == 1 || (threads == 0 && omp_get_max_threads() == 1);
    if (alone && !omp_in_parallel()) {
        body();
        return;
    }
#pragma omp parallel num_threads(alone ? 1 : threads > 0 ? threads : omp_get_max_threads())
    body();
}

} // namespace libdeconv
