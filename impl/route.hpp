// How a pass is computed: in which data type, and as oneDNN's deconvolution, as a matmul (where
// the problem is a matrix product, gemm_formulation.hpp) or, forward and weight gradient, as a
// convolution over the output's phases (subpixel_formulation.hpp). f32 problems compute in f32;
// for bf16 problems oneDNN 2.6's bf16 kernel is faster for most passes but several times slower
// for some (depthwise, large kernels, many weight gradients). The matmul is several times faster
// for some matrix products and slower for others. So every candidate that applies is built and
// the fastest, timed once on this machine, is kept with the cached plan. The f32 route of a bf16
// problem converts in the reorders it does anyway, and is exact for bf16 inputs.
#pragma once

#include "descriptors.hpp"

#include <memory>

namespace libdeconv {

// DECONV_BF16_COMPUTE=bf16|f32 and DECONV_FORMULATION=deconvolution|matmul|subpixel|depthwise
// force a route (for tests and reproducibility) where it can run the problem (bf16 falls back to
// f32 where no bf16 kernel does, the other formulations to deconvolution for passes and problems
// they do not compute); default:
// measured. A measured route is remembered for the process
// (the last 65536 problems and passes), so a problem keeps its route and its exact results when
// its plan is evicted and made again, and threads creating the same new problem at once agree.
std::shared_ptr<const Plan> make_fastest_plan(const Problem &problem, Pass pass);

} // namespace libdeconv
