// LineStager writes a contiguous destination piece by piece through a buffer that streams whole
// lines: at every alignment of the destination, with pieces shorter than a line, of a partial
// vector and longer than a line, over several flushes of the buffer, each element ends up with
// its value and nothing beside the destination is touched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "commit_kernels.hpp"
#include "cpu_features.hpp"

namespace {

using libdeconv::commit_kernels::LineStager;

template <typename Out>
Out value(int64_t i) {
    return static_cast<Out>(i % 30011 + 1); // never the guard, exact in either type
}

template <typename Out>
void check_every_alignment() {
    constexpr Out kGuard = static_cast<Out>(65000);
    constexpr int64_t kMargin = 64; // elements on each side
    for (int64_t offset = 0; offset < 64 / int64_t(sizeof(Out)); ++offset)
        for (int64_t piece : {int64_t(1), int64_t(3), int64_t(16), int64_t(21), int64_t(64), int64_t(200),
                     LineStager<Out>::kMaxPiece}) {
            // Enough pieces to flush the buffer several times, and a last piece cut short.
            const int64_t count = 3 * LineStager<Out>::kCapacity + piece / 2 + 5;
            std::vector<Out> storage(count + 2 * kMargin + 64);
            Out *base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 / sizeof(Out);
            const int64_t total = count + 2 * kMargin + offset;
            for (int64_t i = 0; i < total; ++i) base[i] = kGuard;
            Out *out = base + kMargin + offset;
            {
                auto stager = std::make_unique<LineStager<Out>>(out);
                for (int64_t at = 0; at < count; at += piece) {
                    const int64_t n = std::min(piece, count - at);
                    Out *to = stager->take(n);
                    for (int64_t i = 0; i < n; ++i) to[i] = value<Out>(at + i);
                }
                stager->finish();
                libdeconv::commit_kernels::end_streaming(true);
            }
            for (int64_t i = 0; i < total; ++i) {
                const int64_t k = i - kMargin - offset;
                const Out expected = k >= 0 && k < count ? value<Out>(k) : kGuard;
                ASSERT_EQ(base[i], expected) << "offset " << offset << " piece " << piece << " element " << k;
            }
        }
}

TEST(LineStager, F32AtEveryAlignment) {
    if (!libdeconv::has_avx512()) GTEST_SKIP() << "LineStager streams with AVX-512; the library uses it only there";
    check_every_alignment<float>();
}
TEST(LineStager, Bf16AtEveryAlignment) {
    if (!libdeconv::has_avx512()) GTEST_SKIP() << "LineStager streams with AVX-512; the library uses it only there";
    check_every_alignment<uint16_t>();
}

} // namespace
