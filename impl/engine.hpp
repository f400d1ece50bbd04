// The process-wide oneDNN CPU engine and a stream per thread.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace libdeconv {

const dnnl::engine &cpu_engine();
// CPU streams are cheap, but one per thread keeps concurrent executions fully independent.
dnnl::stream &thread_stream();
bool cpu_has_bf16();

} // namespace libdeconv
