#include "threads.hpp"

#include "error.hpp"

#include <omp.h>

#include <string>

namespace libdeconv {

bool runs_single_threaded(const Problem &problem) {
    // About 5 us of work on one core, where a two-thread fork and join costs 1-2 us per region
    // and a pass has up to five regions (reorders, kernel, output commit).
    constexpr double kMaxFlops = 2.5e5;
    return problem.flops() <= kMaxFlops;
}

void refuse_inside_callers_region(const Problem &problem, const char *function) {
    if (!omp_in_parallel() || runs_single_threaded(problem)) return;
    throw Error(Status::unsupported,
            std::string(function) + " was called inside an OpenMP parallel region (omp_in_parallel() is true), where "
                    "oneDNN 2.6 runs this problem's kernels, built for several threads, on one: they would compute "
                    "wrong results or hang. Only problems the library runs on one thread (about 2.5e5 FLOPs) work "
                    "there; call it outside parallel regions (from std::thread or pthread workers, for instance)");
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
