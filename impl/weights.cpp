#include "weights.hpp"

#include "engine.hpp"
#include "execution.hpp"

#include <cstring>
#include <vector>

namespace libdeconv {
namespace {

// A library-owned copy of the caller's tensor in the role's internal layout.
dnnl::memory pack(const Role &role, const void *data, size_t scratchpad_bytes) {
    std::vector<char> staged; // the subpixel formulation's tensors, split by phase first
    if (role.split) {
        staged.resize(role.conversion.user.get_size());
        role.split(*role.phases, data, staged.data());
        data = staged.data();
    }
    const Conversion &c = role.conversion;
    const dnnl::engine &eng = cpu_engine();
    // Allocated as the primitive sees it, written as the conversion describes it (the same bytes).
    dnnl::memory held(role.primitive_view ? role.primitive_view : c.internal, eng);
    dnnl::memory packed = role.primitive_view ? dnnl::memory(c.internal, eng, held.get_data_handle()) : held;
    if (c.repeat > 0) {
        fill_repeated(c, data, static_cast<float *>(packed.get_data_handle()));
        return held;
    }
    if (c.identical) {
        std::memcpy(packed.get_data_handle(), data, c.user.get_size());
        return held;
    }
    if (role.by_commit) {
        commit_output(role.commit, data, packed.get_data_handle(), nullptr, false);
        return held;
    }
    dnnl::memory user(c.user, eng, const_cast<void *>(data));
    dnnl::memory scratchpad(dnnl::memory::desc({static_cast<dnnl::memory::dim>(scratchpad_bytes)},
                                    dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
            eng);
    const dnnl::memory typed = c.to_internal.staged
            ? dnnl::memory(c.to_internal.staged, eng,
                      static_cast<char *>(scratchpad.get_data_handle()) + c.to_internal.staged_offset)
            : dnnl::memory();
    dnnl::stream &stream = thread_stream();
    run_reorder(c.to_internal, stream, user, packed, scratchpad, typed);
    stream.wait();
    return held;
}

} // namespace

std::shared_ptr<const PackedWeights> pack_weights(const Plan &forward, const void *weights, const void *bias) {
    auto packed = std::make_shared<PackedWeights>();
    packed->weights = pack(forward.roles[role::fwd_weights], weights, forward.scratchpad_bytes);
    const Role &bias_role = forward.roles[role::fwd_bias];
    if (bias_role.present) packed->bias = pack(bias_role, bias, forward.scratchpad_bytes);
    return packed;
}

} // namespace libdeconv
