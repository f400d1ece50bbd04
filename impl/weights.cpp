#include "weights.hpp"

#include "bf16.hpp"
#include "engine.hpp"

#include <cstring>

namespace libdeconv {

void bias_to_f32(const Problem &problem, const void *bias, float *out) {
    const size_t n = static_cast<size_t>(problem.bias_elems());
    if (problem.spec().dtype == DataType::f32)
        std::memcpy(out, bias, n * sizeof(float));
    else
        bf16_to_f32(static_cast<const uint16_t *>(bias), out, n);
}

std::shared_ptr<const PackedWeights> pack_weights(const Problem &problem, const Plan &forward,
        const void *weights, const void *bias) {
    auto packed = std::make_shared<PackedWeights>();
    const Conversion &c = forward.weights;
    const dnnl::engine &eng = cpu_engine();
    packed->weights = dnnl::memory(c.internal, eng);
    dnnl::memory user(c.user, eng, const_cast<void *>(weights));
    if (c.identical) {
        std::memcpy(packed->weights.get_data_handle(), weights, c.user.get_size());
    } else {
        dnnl::memory scratch(dnnl::memory::desc({static_cast<dnnl::memory::dim>(c.scratchpad_bytes)},
                                     dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
                eng);
        dnnl::stream &stream = thread_stream();
        c.to_internal.execute(stream, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, packed->weights}, {DNNL_ARG_SCRATCHPAD, scratch}});
        stream.wait();
    }
    if (problem.spec().bias) {
        packed->bias.resize(static_cast<size_t>(problem.bias_elems()));
        bias_to_f32(problem, bias, packed->bias.data());
    }
    return packed;
}

} // namespace libdeconv
