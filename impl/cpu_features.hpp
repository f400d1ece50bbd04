// Which vector instructions the library's own kernels may use: what the CPU has, capped by the
// ISA oneDNN runs at (ONEDNN_MAX_CPU_ISA), so that one variable makes the whole library run as on
// an older CPU (the tests run the AVX2 kernels that way on AVX-512 machines).
#pragma once

namespace libdeconv {

bool detect_avx2();   // with FMA
bool detect_avx512(); // F, BW and VL

// Inline, decided once: the commits ask per run of elements.
inline bool has_avx2() {
    static const bool has = detect_avx2();
    return has;
}
inline bool has_avx512() {
    static const bool has = detect_avx512();
    return has;
}

} // namespace libdeconv
