// Walks the N-th allocation of each API call through failure: the call must return
// DECONV_OUT_OF_MEMORY, write no output, and leave the handle usable (or destroyable); once N
// exceeds the call's allocations it succeeds. Thread-local state (workspace, bound memory
// objects) is made on a thread's first call, so each attempt of a computing call runs on a
// fresh thread.
#include "deconv.h"
#include "deconv_testing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kMaxAttempts = 2000; // far above any call's allocation count

deconv_params problem(deconv_dtype dtype, deconv_mode mode, bool bias) {
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 4;
    p.out_channels = 6;
    p.groups = 2;
    p.in_size[0] = 5;
    p.in_size[1] = 4;
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    p.pad[0] = 1;
    p.adj[1] = 1;
    p.no_bias = bias ? 0 : 1;
    p.dtype = dtype;
    p.mode = mode;
    return p;
}

// Buffers of a problem, in the problem's dtype, filled deterministically.
struct Buffers {
    std::vector<uint8_t> src, weights, bias, dst, diff_dst, diff_src, diff_weights, diff_bias;
    explicit Buffers(const deconv_params &p) {
        deconv_sizes n;
        EXPECT_EQ(deconv_buffer_sizes(&p, &n), DECONV_OK);
        const size_t e = p.dtype == DECONV_F32 ? 4 : 2;
        auto fill = [&](std::vector<uint8_t> &v, int64_t count, float scale) {
            std::vector<float> f(static_cast<size_t>(count));
            for (size_t i = 0; i < f.size(); ++i) f[i] = scale * float(int(i % 7) - 3);
            v.resize(size_t(count) * e);
            if (v.empty()) return; // memcpy of nothing from an empty vector's NULL is undefined
            if (e == 4)
                std::memcpy(v.data(), f.data(), v.size());
            else
                deconv_f32_to_bf16(f.data(), reinterpret_cast<uint16_t *>(v.data()), f.size());
        };
        fill(src, n.src, 0.5f);
        fill(weights, n.weights, 0.25f);
        fill(bias, n.bias, 0.125f);
        fill(diff_dst, n.dst, 0.75f);
        sentinel(dst, n.dst * e);
        sentinel(diff_src, n.src * e);
        sentinel(diff_weights, n.weights * e);
        sentinel(diff_bias, n.bias * e);
    }
    static void sentinel(std::vector<uint8_t> &v, int64_t bytes) { v.assign(size_t(bytes), 0xA5); }
    static bool untouched(const std::vector<uint8_t> &v) {
        for (uint8_t b : v)
            if (b != 0xA5) return false;
        return true;
    }
};

// Runs `attempt` with the n-th allocation failing, for n = 1, 2, ... until an attempt completes
// without the failure being reached. `attempt` returns the status and checks its own outputs.
void walk(const std::string &what, const std::function<deconv_status()> &attempt,
        const std::function<void()> &before = [] {}) {
    int failures = 0;
    for (int n = 1; n <= kMaxAttempts; ++n) {
        before();
        deconv_testing_fail_allocation(n);
        const deconv_status s = attempt();
        const bool hit = deconv_testing_allocation_failed() != 0;
        deconv_testing_fail_allocation(0);
        if (!hit) {
            EXPECT_EQ(s, DECONV_OK) << what << ": allocation " << n << " was never reached, yet: " << deconv_last_error();
            EXPECT_GT(n, 1) << what << " made no allocation at all: the walk tested nothing";
            std::printf("%s: %d allocations failed in turn, each refused cleanly\n", what.c_str(), failures);
            return;
        }
        ++failures;
        EXPECT_EQ(s, DECONV_OUT_OF_MEMORY) << what << ": allocation " << n << " failed, status " << deconv_status_string(s)
                                          << ": " << deconv_last_error();
        if (s == DECONV_OUT_OF_MEMORY) {
            EXPECT_NE(std::string(deconv_last_error()).find("out of memory"), std::string::npos) << deconv_last_error();
        }
    }
    FAIL() << what << ": still failing after " << kMaxAttempts << " allocations";
}

void on_fresh_thread(const std::function<void()> &f) { std::thread(f).join(); }

struct Case {
    deconv_dtype dtype;
    bool bias;
};
std::string name(const Case &c) { return std::string(c.dtype == DECONV_F32 ? "f32" : "bf16") + (c.bias ? "_bias" : "_no_bias"); }
void PrintTo(const Case &c, std::ostream *os) { *os << name(c); } // not the struct's padding bytes

class AllocationFailure : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
    }
};

TEST_P(AllocationFailure, Create) {
    for (deconv_mode mode : {DECONV_INFERENCE, DECONV_TRAINING}) {
        const deconv_params p = problem(GetParam().dtype, mode, GetParam().bias);
        walk(std::string("deconv_create ") + (mode == DECONV_TRAINING ? "training" : "inference"), [&] {
            deconv *sentinel = reinterpret_cast<deconv *>(0x1);
            deconv *h = sentinel;
            const deconv_status s = deconv_create(&p, &h);
            if (s == DECONV_OK) {
                deconv_destroy(h);
            } else {
                EXPECT_EQ(h, sentinel) << "handle written on failure";
            }
            return s;
        }, [] { deconv_cache_clear(); }); // so that every plan is made (and tuned) again
    }
}

TEST_P(AllocationFailure, SetWeightsThenForward) {
    const deconv_params p = problem(GetParam().dtype, DECONV_INFERENCE, GetParam().bias);
    deconv *h = nullptr;
    ASSERT_EQ(deconv_create(&p, &h), DECONV_OK);
    Buffers b(p);
    const void *bias = GetParam().bias ? b.bias.data() : nullptr;
    walk("deconv_set_weights", [&] { return deconv_set_weights(h, b.weights.data(), bias); });
    // The handle works after all those failures: packed and explicit weights agree.
    std::vector<uint8_t> packed(b.dst.size()), explicit_(b.dst.size());
    ASSERT_EQ(deconv_forward(h, b.src.data(), nullptr, nullptr, packed.data(), DECONV_REQ_WRITE), DECONV_OK);
    ASSERT_EQ(deconv_forward(h, b.src.data(), b.weights.data(), bias, explicit_.data(), DECONV_REQ_WRITE), DECONV_OK);
    EXPECT_EQ(packed, explicit_);
    deconv_destroy(h);
}

TEST_P(AllocationFailure, Forward) {
    const deconv_params p = problem(GetParam().dtype, DECONV_INFERENCE, GetParam().bias);
    deconv *h = nullptr;
    ASSERT_EQ(deconv_create(&p, &h), DECONV_OK);
    Buffers ref(p);
    const void *bias = GetParam().bias ? ref.bias.data() : nullptr;
    std::vector<uint8_t> expected(ref.dst.size());
    ASSERT_EQ(deconv_forward(h, ref.src.data(), ref.weights.data(), bias, expected.data(), DECONV_REQ_WRITE), DECONV_OK);
    for (deconv_req req : {DECONV_REQ_WRITE, DECONV_REQ_ADD}) {
        walk(std::string("deconv_forward req ") + std::to_string(req), [&] {
            deconv_status s = DECONV_OK;
            on_fresh_thread([&] {
                Buffers b(p);
                if (req == DECONV_REQ_ADD) std::fill(b.dst.begin(), b.dst.end(), 0); // 0 + result == result
                s = deconv_forward(h, b.src.data(), b.weights.data(), bias, b.dst.data(), req);
                if (s == DECONV_OK)
                    EXPECT_EQ(b.dst, expected);
                else if (req == DECONV_REQ_WRITE)
                    EXPECT_TRUE(Buffers::untouched(b.dst)) << "dst written on failure";
                else
                    EXPECT_EQ(b.dst, std::vector<uint8_t>(b.dst.size(), 0)) << "dst written on failure";
            });
            return s;
        });
    }
    deconv_destroy(h);
}

TEST_P(AllocationFailure, Backward) {
    const bool bias = GetParam().bias;
    const deconv_params p = problem(GetParam().dtype, DECONV_TRAINING, bias);
    deconv *h = nullptr;
    ASSERT_EQ(deconv_create(&p, &h), DECONV_OK);
    struct Requests {
        const char *name;
        deconv_req src, weights, bias;
    };
    std::vector<Requests> cases{{"all", DECONV_REQ_WRITE, DECONV_REQ_WRITE, bias ? DECONV_REQ_WRITE : DECONV_REQ_NULL},
            {"data", DECONV_REQ_WRITE, DECONV_REQ_NULL, DECONV_REQ_NULL},
            {"weights", DECONV_REQ_NULL, DECONV_REQ_WRITE, DECONV_REQ_NULL}};
    if (bias) cases.push_back({"bias only", DECONV_REQ_NULL, DECONV_REQ_NULL, DECONV_REQ_WRITE});
    for (const Requests &r : cases) {
        Buffers expected(p);
        ASSERT_EQ(deconv_backward(h, expected.src.data(), expected.weights.data(), expected.diff_dst.data(),
                          expected.diff_src.data(), r.src, expected.diff_weights.data(), r.weights,
                          expected.diff_bias.data(), r.bias),
                DECONV_OK);
        walk(std::string("deconv_backward ") + r.name, [&] {
            deconv_status s = DECONV_OK;
            on_fresh_thread([&] {
                Buffers b(p);
                s = deconv_backward(h, b.src.data(), b.weights.data(), b.diff_dst.data(), b.diff_src.data(), r.src,
                        b.diff_weights.data(), r.weights, b.diff_bias.data(), r.bias);
                if (s == DECONV_OK) {
                    EXPECT_EQ(b.diff_src, expected.diff_src);
                    EXPECT_EQ(b.diff_weights, expected.diff_weights);
                    EXPECT_EQ(b.diff_bias, expected.diff_bias);
                } else {
                    // A failure happens before anything is written (allocations come first).
                    EXPECT_TRUE(Buffers::untouched(b.diff_src)) << "diff_src written on failure";
                    EXPECT_TRUE(Buffers::untouched(b.diff_weights)) << "diff_weights written on failure";
                    EXPECT_TRUE(Buffers::untouched(b.diff_bias)) << "diff_bias written on failure";
                }
            });
            return s;
        });
    }
    deconv_destroy(h);
}

INSTANTIATE_TEST_SUITE_P(All, AllocationFailure,
        ::testing::Values(Case{DECONV_F32, true}, Case{DECONV_F32, false}, Case{DECONV_BF16, true}),
        [](const ::testing::TestParamInfo<Case> &i) { return name(i.param); });

} // namespace
