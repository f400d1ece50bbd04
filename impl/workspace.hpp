// Per-thread scratch memory for one call: scratchpads and the internal copies of tensors whose
// layout differs from the caller's. It grows to the largest call a thread made and is reused,
// so steady-state calls allocate nothing, and concurrent calls never share scratch memory.
#pragma once

#include <cstddef>

namespace libdeconv {

// At least `bytes` of 64-byte aligned memory private to the calling thread, valid until the
// thread's next call; the address changes only when the workspace has to grow.
char *thread_workspace(size_t bytes);

} // namespace libdeconv
