// Which vector instructions the library's own kernels may use: what the CPU has, capped by the
// ISA oneDNN runs at (ONEDNN_MAX_CPU_ISA), so that one variable makes the whole library run as on
// an older CPU (the tests run the AVX2 kernels that way on AVX-512 machines).
#pragma once

namespace libdeconv {

bool has_avx2();   // with FMA
bool has_avx512(); // F, BW and VL

} // namespace libdeconv
