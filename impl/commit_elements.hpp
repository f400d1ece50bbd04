// One element of f32 or bf16 data read and written as f32: the commits' scalar loops and the
// edges of their vector kernels.
#pragma once

#include "bf16.hpp"

#include <cstdint>

namespace libdeconv {
namespace commit_kernels {

inline float load(const float *p, int64_t i) { return p[i]; }
inline float load(const uint16_t *p, int64_t i) { return bf16_to_f32(p[i]); }
inline void store(float *p, int64_t i, float v) { p[i] = v; }
inline void store(uint16_t *p, int64_t i, float v) { p[i] = f32_to_bf16(v); }

} // namespace commit_kernels
} // namespace libdeconv
