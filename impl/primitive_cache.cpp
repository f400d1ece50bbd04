#include "primitive_cache.hpp"

#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>

namespace libdeconv {
namespace {

struct KeyHash {
    size_t operator()(const PrimitiveCache::Key &key) const {
        uint64_t h = 1469598103934665603ull; // FNV-1a over the values
        for (int64_t v : key) {
            h ^= static_cast<uint64_t>(v);
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h);
    }
};

constexpr size_t kDefaultCapacity = 64;

} // namespace

struct PrimitiveCache::State {
    using Entry = std::pair<Key, Value>;
    mutable std::mutex mutex;
    std::list<Entry> recency; // most recently used first
    std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
    size_t capacity = 0;
    uint64_t hits = 0, misses = 0;

    void evict_to(size_t limit) {
        while (recency.size() > limit) {
            index.erase(recency.back().first);
            recency.pop_back();
        }
    }
};

size_t capacity_from_environment(size_t fallback) {
    const char *text = std::getenv("DECONV_CACHE_CAPACITY");
    if (!text || !*text) return fallback;
    char *end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    return (end && *end == '\0' && text[0] != '-') ? static_cast<size_t>(value) : fallback;
}

PrimitiveCache &PrimitiveCache::instance() {
    // Never destroyed: handles destroyed during static destruction must still find it.
    static PrimitiveCache *cache = new PrimitiveCache(capacity_from_environment(kDefaultCapacity));
    return *cache;
}

PrimitiveCache::PrimitiveCache(size_t capacity) : state_(new State) { state_->capacity = capacity; }
PrimitiveCache::~PrimitiveCache() = default;

PrimitiveCache::Value PrimitiveCache::get_or_create(const Key &key, const std::function<Value()> &make) {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        auto found = state_->index.find(key);
        if (found != state_->index.end()) {
            ++state_->hits;
            state_->recency.splice(state_->recency.begin(), state_->recency, found->second);
            return found->second->second;
        }
        ++state_->misses;
    }
    Value made = make();
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->capacity == 0) return made;
    auto raced = state_->index.find(key);
    if (raced != state_->index.end()) return raced->second->second; // another thread was faster
    state_->recency.emplace_front(key, made);
    state_->index.emplace(key, state_->recency.begin());
    state_->evict_to(state_->capacity);
    return made;
}

void PrimitiveCache::set_capacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->capacity = capacity;
    state_->evict_to(capacity);
}

void PrimitiveCache::clear() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->evict_to(0);
    state_->hits = state_->misses = 0;
}

CacheStats PrimitiveCache::stats() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return {state_->hits, state_->misses, state_->recency.size(), state_->capacity};
}

} // namespace libdeconv
