// bf16 <-> f32 conversion (round to nearest even, NaN kept quiet).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace libdeconv {

// Branch-free, so that loops over it vectorize.
inline uint16_t f32_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
    return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float bf16_to_f32(uint16_t value) {
    uint32_t bits = static_cast<uint32_t>(value) << 16;
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

void f32_to_bf16(const float *src, uint16_t *dst, size_t count);
void bf16_to_f32(const uint16_t *src, float *dst, size_t count);

} // namespace libdeconv
