// Weight-format control: weights (and bias) packed once into the forward primitive's layouts,
// for inference handles that call deconv_set_weights.
#pragma once

#include "descriptors.hpp"

#include <memory>

namespace libdeconv {

struct PackedWeights {
    dnnl::memory weights; // the forward plan's internal weights layout, owned by oneDNN
    dnnl::memory bias;    // f32, empty without bias
};

std::shared_ptr<const PackedWeights> pack_weights(const Plan &forward, const void *weights, const void *bias);

} // namespace libdeconv
