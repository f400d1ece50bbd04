#include "workspace.hpp"

#include <cstdlib>
#include <new>

namespace libdeconv {

namespace {
constexpr size_t kAlignment = 64;
size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
} // namespace

Workspace &Workspace::begin() {
    thread_local Workspace workspace;
    workspace.offsets_.clear();
    workspace.total_ = 0;
    return workspace;
}

Workspace::~Workspace() { std::free(base_); }

size_t Workspace::reserve(size_t bytes) {
    offsets_.push_back(total_);
    total_ += aligned(bytes == 0 ? 1 : bytes);
    return offsets_.size() - 1;
}

void Workspace::commit() {
    if (total_ <= capacity_) return;
    char *grown = static_cast<char *>(std::aligned_alloc(kAlignment, aligned(total_)));
    if (!grown) throw std::bad_alloc();
    std::free(base_);
    base_ = grown;
    capacity_ = total_;
}

void *Workspace::get(size_t index) const { return base_ + offsets_[index]; }

} // namespace libdeconv
