// Per-thread scratch memory for one call: scratchpads and the internal copies of tensors whose
// layout differs from the caller's. It grows to the largest call a thread made and is reused,
// so steady-state calls allocate nothing, and concurrent calls never share scratch memory.
#pragma once

#include <cstddef>
#include <vector>

namespace libdeconv {

class Workspace {
public:
    // Collect the sizes first, then allocate once; pointers stay valid until the thread's next
    // call to begin().
    static Workspace &begin();
    // Reserves `bytes` (64-byte aligned) and returns its index for get() after commit().
    size_t reserve(size_t bytes);
    void commit();
    void *get(size_t index) const;

private:
    Workspace() = default;
    ~Workspace();
    std::vector<size_t> offsets_;
    size_t total_ = 0;
    char *base_ = nullptr;
    size_t capacity_ = 0;
};

} // namespace libdeconv
