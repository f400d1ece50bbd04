#include "threads.hpp"

#include <omp.h>

namespace libdeconv {

bool runs_single_threaded(const Problem &problem) {
    // About 5 us of work on one core, where a two-thread fork and join costs 1-2 us per region
    // and a pass has up to five regions (reorders, kernel, output commit).
    constexpr double kMaxFlops = 2.5e5;
    return problem.flops() <= kMaxFlops;
}

SingleThreaded::SingleThreaded(bool active) {
    if (!active) return;
    saved_ = omp_get_max_threads();
    omp_set_num_threads(1);
}

SingleThreaded::~SingleThreaded() {
    if (saved_ > 0) omp_set_num_threads(saved_);
}

} // namespace libdeconv
