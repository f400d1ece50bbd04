// Compiled only into DECONV_FAULT_INJECTION builds, directly into libdeconv.so, so that the
// replaced operator new binds to the library's own code only (the symbols stay hidden).
#include "fault_injection.hpp"

#include "deconv_testing.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace libdeconv {
namespace {
std::atomic<int64_t> countdown{0}; // 0: off; n > 0: the n-th allocation from now fails
std::atomic<int> failed{0};
} // namespace

bool allocation_must_fail() {
    int64_t left = countdown.load(std::memory_order_relaxed);
    while (left > 0) {
        if (countdown.compare_exchange_weak(left, left - 1)) {
            if (left != 1) return false;
            failed.store(1);
            return true;
        }
    }
    return false;
}

} // namespace libdeconv

extern "C" {
DECONV_EXPORT void deconv_testing_fail_allocation(int64_t nth) {
    libdeconv::failed.store(0);
    libdeconv::countdown.store(nth > 0 ? nth : 0);
}
DECONV_EXPORT int deconv_testing_allocation_failed(void) { return libdeconv::failed.load(); }
}

// Only the allocating operators are replaced, and they hand the allocation itself to the
// process-wide operator new (found with RTLD_DEFAULT: ours is a hidden symbol, so that is
// libstdc++'s, or a sanitizer's), which every operator delete matches.
namespace {
using New = void *(*)(std::size_t);
New global_new(const char *mangled) {
    void *symbol = dlsym(RTLD_DEFAULT, mangled);
    if (!symbol) std::abort(); // no C++ runtime at all: cannot happen in a C++ library
    return reinterpret_cast<New>(symbol);
}
void *allocate(New real, std::size_t bytes) {
    if (libdeconv::allocation_must_fail()) throw std::bad_alloc();
    return real(bytes);
}
} // namespace

void *operator new(std::size_t n) {
    static const New real = global_new("_Znwm");
    return allocate(real, n);
}
void *operator new[](std::size_t n) {
    static const New real = global_new("_Znam");
    return allocate(real, n);
}
