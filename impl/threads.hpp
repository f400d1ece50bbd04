// How many OpenMP threads a plan uses. oneDNN fixes a primitive's thread count when it is
// created (and its reorders read the calling thread's count when they run), so a plan built and
// run under SingleThreaded stays on the calling thread.
#pragma once

#include "problem.hpp"

namespace libdeconv {

// Problems this small run faster on the calling thread alone: forking and joining a parallel
// region takes microseconds, more than splitting their work saves.
bool runs_single_threaded(const Problem &problem);

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

} // namespace libdeconv
