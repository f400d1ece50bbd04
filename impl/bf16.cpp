#include "bf16.hpp"

namespace libdeconv {

void f32_to_bf16(const float *src, uint16_t *dst, size_t count) {
    for (size_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32(const uint16_t *src, float *dst, size_t count) {
    for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(src[i]);
}

} // namespace libdeconv
