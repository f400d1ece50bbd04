// The reorders between a caller's layout and a primitive's. Where oneDNN has no bf16 kernels
// (no AVX-512), its reorders between bf16 and f32 run a scalar loop (simple:any, on AVX2:
// unet.up2's matmul output, f32 patches into bf16 channels-last, 80-94 ms a call where f32 takes
// about 2; a 4096x256 matrix bf16 -> f32 of the same layout 23 ms). There the library converts
// the type, element by element over the bf16 side's layout, and oneDNN's f32 reorder, if the
// layouts differ, moves the elements: two steps through an f32 copy placed in the plan's
// scratchpad, past the reorder's own.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>

namespace libdeconv {

struct Reorder {
    dnnl::reorder primitive;   // oneDNN's reorder: the whole one, or the f32 step; none if only the type changes
    bool typed = false;        // the library converts the type (between bf16 and f32)
    bool type_first = false;   // bf16 in: the type changes before the f32 step, else after it
    bool adds = false;         // the type conversion adds into its destination (an add request)
    int64_t elements = 0;      // the type conversion's, over the bf16 side's dense layout
    dnnl::memory::desc staged; // the f32 copy between the two steps; empty where there is one step
    size_t staged_offset = 0;  // of the copy, in the workspace (within the scratchpad)
    explicit operator bool() const { return primitive || typed; }
};

// A reorder `from` -> `to`, adding into `to` when `accumulate`; grows `scratchpad_bytes` to what
// it needs.
Reorder make_reorder(const dnnl::memory::desc &from, const dnnl::memory::desc &to, bool accumulate,
        size_t &scratchpad_bytes);

// Runs `r`; `staged` is a memory of r.staged at r.staged_offset (empty where r.staged is).
void run_reorder(const Reorder &r, dnnl::stream &stream, const dnnl::memory &from, const dnnl::memory &to,
        const dnnl::memory &scratchpad, const dnnl::memory &staged);

} // namespace libdeconv
