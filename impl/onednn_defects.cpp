#include "onednn_defects.hpp"

namespace libdeconv {

bool known_defective(const std::string &impl, Pass pass, const Spec &spec) {
    // Backward data through brgconv:avx512_core_amx_bf16 (not its 1x1 variant) reads a NULL
    // pointer in execution once out_channels / groups exceeds 5120, whatever the other sizes;
    // the margin to 4096 is ours.
    if (pass == Pass::backward_data && impl == "brgconv:avx512_core_amx_bf16" &&
        spec.out_channels / spec.groups > 4096)
        return true;
    return false;
}

} // namespace libdeconv
