#include "engine.hpp"

namespace libdeconv {

const dnnl::engine &cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

dnnl::stream &thread_stream() {
    thread_local dnnl::stream stream(cpu_engine());
    return stream;
}

bool onednn_has_bf16_kernels() {
    // oneDNN's bf16 kernels need AVX-512 (native bf16 or emulated on avx512_core); below that
    // only reference kernels remain, which are far too slow to offer.
    static const bool has = [] {
        const auto isa = dnnl::get_effective_cpu_isa();
        switch (isa) {
        case dnnl::cpu_isa::avx512_core:
        case dnnl::cpu_isa::avx512_core_vnni:
        case dnnl::cpu_isa::avx512_core_bf16:
        case dnnl::cpu_isa::avx512_core_amx:
            return true;
        default:
            return false;
        }
    }();
    return has;
}

} // namespace libdeconv
