// commit_run writes out[i] = in[i] + bias[i] for i in [0, count), streaming the whole vectors
// whose lines no plain store shares: at every alignment of `out` and length of the run, each
// element is written once with its value and nothing next to the run is touched. The values are
// small integers plus 0.5, exact in bf16, so that the expected words need no rounding.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "commit_kernels.hpp"

namespace {

constexpr uint16_t kGuardWord = 0x7fc1; // a NaN no commit writes
constexpr float kGuard = -12345.0f;

uint16_t bf16_of_exact(float v) { // v exact in bf16: its upper 16 bits
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return static_cast<uint16_t>(bits >> 16);
}

float value(int64_t i) { return static_cast<float>(i % 61) - 30.0f; }
float bias_of(int64_t i) { return static_cast<float>(i % 7) + 0.5f; }

template <typename Out>
void check_every_alignment() {
    constexpr int64_t kMargin = 64; // elements on each side
    for (int64_t offset = 0; offset < 64 / int64_t(sizeof(Out)); ++offset)
        for (int64_t count : {1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 256, 257, 1000}) {
            std::vector<float> in(count), bias(count);
            for (int64_t i = 0; i < count; ++i) {
                in[i] = value(i);
                bias[i] = bias_of(i);
            }
            // 64-byte aligned storage, the run starting `offset` elements in.
            std::vector<char> storage((count + 2 * kMargin) * sizeof(Out) + 64 + 64 * sizeof(Out));
            char *aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
            Out *base = reinterpret_cast<Out *>(aligned);
            const int64_t total = count + 2 * kMargin + offset;
            for (int64_t i = 0; i < total; ++i) base[i] = std::is_same_v<Out, float> ? Out(kGuard) : Out(kGuardWord);
            Out *out = base + kMargin + offset;
            libdeconv::commit_kernels::commit_run<false, true>(in.data(), out, count, bias.data(), 1);
            libdeconv::commit_kernels::end_streaming(true);
            for (int64_t i = 0; i < total; ++i) {
                const int64_t k = i - kMargin - offset;
                const bool inside = k >= 0 && k < count;
                if constexpr (std::is_same_v<Out, float>) {
                    const float expected = inside ? in[k] + bias[k] : kGuard;
                    ASSERT_EQ(base[i], expected) << "offset " << offset << " count " << count << " element " << k;
                } else {
                    const uint16_t expected = inside ? bf16_of_exact(in[k] + bias[k]) : kGuardWord;
                    ASSERT_EQ(base[i], expected) << "offset " << offset << " count " << count << " element " << k;
                }
            }
        }
}

TEST(CommitRun, StreamedF32AtEveryAlignment) { check_every_alignment<float>(); }
TEST(CommitRun, StreamedBf16AtEveryAlignment) { check_every_alignment<uint16_t>(); }

} // namespace
