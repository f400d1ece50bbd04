// Weight-format control: weights packed once into the forward primitive's layout (inference),
// and the bias in the f32 form every primitive takes.
#pragma once

#include "descriptors.hpp"

#include <memory>
#include <vector>

namespace libdeconv {

struct PackedWeights {
    dnnl::memory weights;    // in plan.weights.internal, owned by oneDNN
    std::vector<float> bias; // empty without bias
};

std::shared_ptr<const PackedWeights> pack_weights(const Problem &problem, const Plan &forward,
        const void *weights, const void *bias);

// The caller's bias (f32 or bf16 words) as f32.
void bias_to_f32(const Problem &problem, const void *bias, float *out);

} // namespace libdeconv
