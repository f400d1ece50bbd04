// Test-only allocation failure. In builds with DECONV_FAULT_INJECTION the library's own
// allocations (operator new in its code, its workspaces) consult a countdown that the tests set
// through deconv_testing_fail_allocation(); in other builds this is a constant `false`.
#pragma once

namespace libdeconv {

#ifdef DECONV_FAULT_INJECTION
bool allocation_must_fail();
#else
constexpr bool allocation_must_fail() { return false; }
#endif

} // namespace libdeconv
