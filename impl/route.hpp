// The data type a pass computes in. f32 problems compute in f32. For bf16 problems oneDNN 2.6's
// bf16 kernel is faster for most passes but several times slower for some (depthwise, large
// kernels, many weight gradients), so both routes are built and the faster one, timed once on
// this machine, is kept with the cached plan. The f32 route converts in the reorders it does
// anyway, and is exact for bf16 inputs.
#pragma once

#include "descriptors.hpp"

#include <memory>

namespace libdeconv {

// DECONV_BF16_COMPUTE=bf16 or =f32 forces a route (for tests and reproducibility); default auto.
// A measured route is remembered for the process (the last 65536 bf16 problems and passes), so
// a problem keeps its route and its exact results when its plan is evicted and made again, and
// threads creating the same new problem at once agree on it.
std::shared_ptr<const Plan> make_fastest_plan(const Problem &problem, Pass pass);

} // namespace libdeconv
