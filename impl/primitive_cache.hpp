// The process-wide primitive cache: bounded, least recently used first out, thread-safe, shared
// by every handle. Entries are immutable plans held by shared_ptr, so an eviction never
// invalidates a handle that still uses the plan.
#pragma once

#include "descriptors.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace libdeconv {

struct CacheStats {
    uint64_t hits = 0, misses = 0, entries = 0, capacity = 0;
};

class PrimitiveCache {
public:
    using Key = std::vector<int64_t>;
    using Value = std::shared_ptr<const Plan>;

    static PrimitiveCache &instance();

    // The cached plan for `key`, or the one `make` builds (then cached). `make` runs without the
    // lock held, so a slow primitive creation never blocks other threads' lookups.
    Value get_or_create(const Key &key, const std::function<Value()> &make);

    void set_capacity(size_t capacity);
    void clear();
    CacheStats stats() const;

    explicit PrimitiveCache(size_t capacity);
    ~PrimitiveCache();
    PrimitiveCache(const PrimitiveCache &) = delete;
    PrimitiveCache &operator=(const PrimitiveCache &) = delete;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// DECONV_CACHE_CAPACITY when set to a number, else the default.
size_t capacity_from_environment(size_t fallback);

} // namespace libdeconv
