// The process-wide oneDNN CPU engine and a stream per thread.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace libdeconv {

const dnnl::engine &cpu_engine();
// CPU streams are cheap, but one per thread keeps concurrent executions fully independent.
dnnl::stream &thread_stream();
// Whether oneDNN has bf16 kernels here (AVX-512); without them bf16 problems compute in f32.
bool onednn_has_bf16_kernels();

} // namespace libdeconv
