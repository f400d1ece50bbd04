// diff_bias as a reduction of diff_dst over batch and space, in the caller's layout. oneDNN 2.6's
// deconvolution computes it in a pass of its own that costs more than the weight gradient on
// some kernels (measured: adj.s2 bf16 on AMX 0.14 ms without it, 0.95 ms with it), so the
// library always reduces it here, on all threads, reading diff_dst once.
#pragma once

#include "execution.hpp" // Req
#include "problem.hpp"

#include <vector>

namespace libdeconv {

// Per-thread partial sums, reserved before any output is written (std::bad_alloc otherwise).
struct BiasGradientScratch {
    int threads = 1;
    std::vector<double> partial; // threads x out_channels
    std::vector<float> run;      // threads x out_channels
};

// This thread's scratch, grown for the problem; no allocation once it has the size.
BiasGradientScratch &bias_gradient_scratch(const Spec &spec);

// diff_bias (=|+=) the sums of diff_dst per output channel; `pixels` is the output's spatial size.
void reduce_bias_gradient(const Spec &spec, int64_t pixels, const void *diff_dst, void *diff_bias, Req req,
        BiasGradientScratch &scratch);

} // namespace libdeconv
