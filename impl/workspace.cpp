#include "workspace.hpp"

#include "fault_injection.hpp"

#include <cstdlib>
#include <new>

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
        char *grown = allocation_must_fail() ? nullptr : static_cast<char *>(std::aligned_alloc(kAlignment, size));
        if (!grown) throw std::bad_alloc();
        std::free(workspace.base);
        workspace.base = grown;
        workspace.capacity = size;
    }
    return workspace.base;
}

} // namespace libdeconv
