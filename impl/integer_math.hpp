// Integer helpers for index arithmetic where operands may be negative (pad offsets).
#pragma once

#include <cstdint>

namespace libdeconv {

// Rounds toward minus infinity; b > 0.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The non-negative remainder; m > 0.
inline int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// The smallest multiple of b not below a; a >= 0, b > 0.
inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

} // namespace libdeconv
