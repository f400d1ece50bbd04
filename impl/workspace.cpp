#include "workspace.hpp"

#include "fault_injection.hpp"

#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace libdeconv {
namespace {

struct Workspace {
    char *base = nullptr;
    size_t capacity = 0;
    ~Workspace() { std::free(base); }
};

constexpr size_t kAlignment = 64;

} // namespace

char *thread_workspace(size_t bytes) {
    thread_local Workspace workspace;
    if (bytes > workspace.capacity || !workspace.base) {
        const size_t size = (bytes + kAlignment) / kAlignment * kAlignment;
        // Tens of MiB of internal copies walked in 4 KiB pages cost TLB misses: huge pages were
        // 3-5% faster on unet.up2 f32 (the first call pays for them, in the kernel's compaction).
        const size_t align = size >= (size_t(4) << 20) ? (size_t(2) << 20) : kAlignment;
        const size_t rounded = (size + align - 1) / align * align;
        char *grown = allocation_must_fail() ? nullptr : static_cast<char *>(std::aligned_alloc(align, rounded));
        if (!grown) throw std::bad_alloc();
        if (align > kAlignment) madvise(grown, rounded, MADV_HUGEPAGE);
        std::free(workspace.base);
        workspace.base = grown;
        workspace.capacity = size;
    }
    return workspace.base;
}

} // namespace libdeconv
