#pragma once
// oneDNN 2.6 kernels that crash, or take minutes, for some geometries. Implementation selection
// refuses a problem whose pass would reach one (bf16 problems then compute that pass in f32);
// each case has a regression test in tests/cpp/test_onednn_workarounds.cpp.

#include "problem.hpp"

#include <string>

namespace libdeconv {

// True when `impl` (oneDNN's implementation name) must not run `pass` of this problem.
bool known_defective(const std::string &impl, Pass pass, const Spec &spec);

} // namespace libdeconv
