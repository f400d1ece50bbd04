#include "cpu_features.hpp"

#include <oneapi/dnnl/dnnl.hpp>

namespace libdeconv {
namespace {

// The ISA values are masks of the features they include (dnnl_types.h).
bool onednn_allows(dnnl_cpu_isa_t isa) {
    static const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (effective & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

} // namespace

bool detect_avx2() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && onednn_allows(dnnl_cpu_isa_avx2);
}

bool detect_avx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && onednn_allows(dnnl_cpu_isa_avx512_core);
}

} // namespace libdeconv
