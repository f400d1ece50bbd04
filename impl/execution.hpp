// Runs one plan on caller buffers: converts inputs whose layout differs into workspace copies,
// executes the primitive, and commits outputs with the caller's request (write or add); over
// the batch chunk by chunk where the plan is made for a part of it (Plan::batch_chunks). The
// oneDNN memory objects a call needs are kept per thread and plan, so a steady-state call
// creates and allocates nothing.
#pragma once

#include "descriptors.hpp"

#include <array>
#include <initializer_list>

namespace libdeconv {

enum class Req { null = 0, write = 1, add = 2 };

// What the caller passes for one role of the plan.
struct Tensor {
    const void *user = nullptr;         // the caller's buffer (may be NULL for a dropped output)
    const dnnl::memory *ready = nullptr; // an input already in the internal layout (packed weights)
    Req req = Req::write;               // outputs: Req::null computes into the workspace and drops it
};

using Tensors = std::array<Tensor, kMaxRoles>;

void execute(const Plan &plan, const Tensors &tensors);

// The internal copy of an input whose conversion repeats elements (Conversion::repeat > 0).
void fill_repeated(const Conversion &conversion, const void *user, float *internal);

// Everything a run of these plans allocates on this thread, done up front, so that a call that
// runs several plans cannot fail after it wrote an output.
void prepare(std::initializer_list<const Plan *> plans);

} // namespace libdeconv
