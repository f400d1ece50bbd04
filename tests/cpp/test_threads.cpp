// Thread safety (DESIGN.md): any handle may be used by several threads at once, with results
// identical to serial use. Every thread works on its own inputs, so a scratchpad or internal
// buffer shared between concurrent calls shows up as a wrong (mixed) result, and each result is
// compared bit for bit with a serial run of the same call.
//
// The serial reference runs on a fresh std::thread, like the workers, so both use the same
// OpenMP defaults (oneDNN's work split, and with it the rounding, depends on the team size).
#include <deconv.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 30;

using HandlePtr = std::unique_ptr<deconv, decltype(&deconv_destroy)>;

struct Config {
    deconv_dtype dtype;
    deconv_layout layout;
};

void PrintTo(const Config &c, std::ostream *os) {
    *os << (c.dtype == DECONV_F32 ? "f32" : "bf16") << (c.layout == DECONV_CHANNELS_FIRST ? " channels-first" : " channels-last");
}

std::string name_of(const ::testing::TestParamInfo<Config> &info) {
    return std::string(info.param.dtype == DECONV_F32 ? "f32" : "bf16") +
           (info.param.layout == DECONV_CHANNELS_FIRST ? "_channels_first" : "_channels_last");
}

// Large enough channel counts for blocked (reordered) layouts, and a bias, so that the library
// needs internal buffers; `variant` makes distinct problems.
deconv_params problem(const Config &c, deconv_mode mode, int variant = 0) {
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 16;
    p.out_channels = 32;
    p.in_size[0] = 9 + variant;
    p.in_size[1] = 7;
    p.kernel[0] = 4;
    p.kernel[1] = 3;
    p.stride[0] = 2;
    p.stride[1] = 2;
    p.pad[0] = 1;
    p.pad[1] = 1;
    p.adj[1] = 1;
    p.dtype = c.dtype;
    p.layout = c.layout;
    p.mode = mode;
    return p;
}

// Raw bytes of a buffer in the problem's data type.
using Bytes = std::vector<unsigned char>;

Bytes values(const deconv_params &p, int64_t n, double phase) {
    std::vector<float> f(static_cast<size_t>(n));
    for (size_t i = 0; i < f.size(); i++) f[i] = float(std::sin(0.37 * double(i) + phase));
    if (p.dtype == DECONV_F32) {
        Bytes b(f.size() * 4);
        std::memcpy(b.data(), f.data(), b.size());
        return b;
    }
    std::vector<uint16_t> h(f.size());
    deconv_f32_to_bf16(f.data(), h.data(), f.size());
    Bytes b(h.size() * 2);
    std::memcpy(b.data(), h.data(), b.size());
    return b;
}

size_t elem_size(const deconv_params &p) { return p.dtype == DECONV_F32 ? 4 : 2; }

// The inputs of one thread (seed) and its outputs.
struct Work {
    Bytes src, weights, bias, diff_dst;
    Bytes dst, diff_src, diff_weights, diff_bias;

    Work(const deconv_params &p, int seed) {
        deconv_sizes sz{};
        EXPECT_EQ(deconv_buffer_sizes(&p, &sz), DECONV_OK) << deconv_last_error();
        src = values(p, sz.src, 0.1 + seed);
        weights = values(p, sz.weights, 0.2 + seed);
        bias = values(p, sz.bias, 0.3 + seed);
        diff_dst = values(p, sz.dst, 0.4 + seed);
        const size_t es = elem_size(p);
        dst.assign(size_t(sz.dst) * es, 0);
        diff_src.assign(size_t(sz.src) * es, 0);
        diff_weights.assign(size_t(sz.weights) * es, 0);
        diff_bias.assign(size_t(sz.bias) * es, 0);
    }
};

// Results of the calls a thread makes; compared between serial and concurrent runs.
struct Results {
    Bytes fwd, fwd_packed, bwd;
    bool operator==(const Results &o) const { return fwd == o.fwd && fwd_packed == o.fwd_packed && bwd == o.bwd; }
};

// One forward with explicit weights; returns "" or the error.
std::string forward(deconv *h, Work &w) {
    deconv_status s = deconv_forward(h, w.src.data(), w.weights.data(), w.bias.data(), w.dst.data(), DECONV_REQ_WRITE);
    return s == DECONV_OK ? "" : deconv_last_error();
}
std::string forward_packed(deconv *h, Work &w) {
    deconv_status s = deconv_forward(h, w.src.data(), nullptr, nullptr, w.dst.data(), DECONV_REQ_WRITE);
    return s == DECONV_OK ? "" : deconv_last_error();
}
std::string backward(deconv *h, Work &w) {
    deconv_status s = deconv_backward(h, w.src.data(), w.weights.data(), w.diff_dst.data(), w.diff_src.data(),
                                      DECONV_REQ_WRITE, w.diff_weights.data(), DECONV_REQ_WRITE, w.diff_bias.data(),
                                      DECONV_REQ_WRITE);
    return s == DECONV_OK ? "" : deconv_last_error();
}
Bytes backward_outputs(const Work &w) {
    Bytes b = w.diff_src;
    b.insert(b.end(), w.diff_weights.begin(), w.diff_weights.end());
    b.insert(b.end(), w.diff_bias.begin(), w.diff_bias.end());
    return b;
}

void run_on_thread(const std::function<void()> &f) {
    std::thread t(f);
    t.join();
}

// Runs body(thread_index) on kThreads threads started together; collects failure messages
// (gtest assertions are not used off the main thread).
std::vector<std::string> run_concurrently(const std::function<std::string(int)> &body) {
    std::vector<std::string> errors(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            ready++;
            while (ready.load() < kThreads) std::this_thread::yield();  // maximise overlap
            errors[size_t(t)] = body(t);
        });
    for (auto &t : ts) t.join();
    return errors;
}

void expect_no_errors(const std::vector<std::string> &errors) {
    for (size_t t = 0; t < errors.size(); t++) EXPECT_EQ(errors[t], "") << "thread " << t;
}

class Threads : public ::testing::TestWithParam<Config> {
  protected:
    void SetUp() override {
    }
    static HandlePtr create(const deconv_params &p) {
        deconv *h = nullptr;
        deconv_status s = deconv_create(&p, &h);
        EXPECT_EQ(s, DECONV_OK) << deconv_last_error();
        return HandlePtr(s == DECONV_OK ? h : nullptr, &deconv_destroy);
    }
};

TEST_P(Threads, OneInferenceHandleSharedByFourThreads) {
    const deconv_params p = problem(GetParam(), DECONV_INFERENCE);
    HandlePtr h = create(p);
    ASSERT_TRUE(h);
    // Packed weights are the same for every thread (set once, before the threads start).
    Work packed_source(p, 100);
    ASSERT_EQ(deconv_set_weights(h.get(), packed_source.weights.data(), packed_source.bias.data()), DECONV_OK)
        << deconv_last_error();

    std::vector<Results> expected(kThreads);
    run_on_thread([&] {
        for (int t = 0; t < kThreads; t++) {
            Work w(p, t);
            EXPECT_EQ(forward(h.get(), w), "");
            expected[size_t(t)].fwd = w.dst;
            EXPECT_EQ(forward_packed(h.get(), w), "");
            expected[size_t(t)].fwd_packed = w.dst;
        }
    });

    auto errors = run_concurrently([&](int t) -> std::string {
        Work w(p, t);
        for (int i = 0; i < kIterations; i++) {
            // Alternate packed and explicit weights, so both paths overlap with each other.
            bool packed = (i + t) % 2 == 0;
            std::fill(w.dst.begin(), w.dst.end(), 0);
            std::string e = packed ? forward_packed(h.get(), w) : forward(h.get(), w);
            if (!e.empty()) return e;
            if (w.dst != (packed ? expected[size_t(t)].fwd_packed : expected[size_t(t)].fwd))
                return "iteration " + std::to_string(i) + (packed ? " (packed)" : "") + ": result differs from serial";
        }
        return "";
    });
    expect_no_errors(errors);
}

TEST_P(Threads, OneTrainingHandleSharedByFourThreads) {
    const deconv_params p = problem(GetParam(), DECONV_TRAINING);
    HandlePtr h = create(p);
    ASSERT_TRUE(h);
    std::vector<Results> expected(kThreads);
    run_on_thread([&] {
        for (int t = 0; t < kThreads; t++) {
            Work w(p, t);
            EXPECT_EQ(forward(h.get(), w), "");
            EXPECT_EQ(backward(h.get(), w), "");
            expected[size_t(t)].fwd = w.dst;
            expected[size_t(t)].bwd = backward_outputs(w);
        }
    });

    auto errors = run_concurrently([&](int t) -> std::string {
        Work w(p, t);
        for (int i = 0; i < kIterations; i++) {
            // Threads are out of phase: forward on some while backward runs on others.
            const bool fwd_first = (i + t) % 2 == 0;
            for (int k = 0; k < 2; k++) {
                if ((k == 0) == fwd_first) {
                    std::string e = forward(h.get(), w);
                    if (!e.empty()) return e;
                    if (w.dst != expected[size_t(t)].fwd)
                        return "iteration " + std::to_string(i) + ": forward differs from serial";
                } else {
                    std::string e = backward(h.get(), w);
                    if (!e.empty()) return e;
                    if (backward_outputs(w) != expected[size_t(t)].bwd)
                        return "iteration " + std::to_string(i) + ": backward differs from serial";
                }
            }
        }
        return "";
    });
    expect_no_errors(errors);
}

// Each thread creates its own handles, at the same time as the others (the shared cache is hit
// concurrently): threads 0 and 1 share a problem, threads 2 and 3 have problems of their own.
TEST_P(Threads, FourThreadsWithTheirOwnHandles) {
    auto variant = [](int t) { return t < 2 ? 0 : t - 1; };
    std::vector<Results> expected(kThreads);
    run_on_thread([&] {
        for (int t = 0; t < kThreads; t++) {
            const deconv_params p = problem(GetParam(), DECONV_TRAINING, variant(t));
            HandlePtr h = create(p);
            if (!h) return;
            Work w(p, t);
            EXPECT_EQ(forward(h.get(), w), "");
            EXPECT_EQ(backward(h.get(), w), "");
            expected[size_t(t)].fwd = w.dst;
            expected[size_t(t)].bwd = backward_outputs(w);
        }
    });

    auto errors = run_concurrently([&](int t) -> std::string {
        const deconv_params p = problem(GetParam(), DECONV_TRAINING, variant(t));
        deconv *raw = nullptr;
        if (deconv_create(&p, &raw) != DECONV_OK) return std::string("create: ") + deconv_last_error();
        HandlePtr h(raw, &deconv_destroy);
        Work w(p, t);
        for (int i = 0; i < kIterations; i++) {
            std::string e = forward(h.get(), w);
            if (e.empty()) e = backward(h.get(), w);
            if (!e.empty()) return e;
            if (w.dst != expected[size_t(t)].fwd || backward_outputs(w) != expected[size_t(t)].bwd)
                return "iteration " + std::to_string(i) + ": result differs from serial";
        }
        return "";
    });
    expect_no_errors(errors);
}

// Creating and destroying handles from several threads while a tiny cache evicts all the time.
TEST_P(Threads, CreateAndDestroyUnderCacheEviction) {
    constexpr int kProblems = 3;
    std::vector<Bytes> expected(kProblems);
    run_on_thread([&] {
        for (int v = 0; v < kProblems; v++) {
            const deconv_params p = problem(GetParam(), DECONV_INFERENCE, v);
            HandlePtr h = create(p);
            if (!h) return;
            Work w(p, v);
            EXPECT_EQ(forward(h.get(), w), "");
            expected[size_t(v)] = w.dst;
        }
    });

    ASSERT_EQ(deconv_cache_set_capacity(1), DECONV_OK);
    auto errors = run_concurrently([&](int t) -> std::string {
        for (int i = 0; i < 8; i++) {
            const int v = (t + i) % kProblems;
            const deconv_params p = problem(GetParam(), DECONV_INFERENCE, v);
            deconv *raw = nullptr;
            if (deconv_create(&p, &raw) != DECONV_OK) return std::string("create: ") + deconv_last_error();
            HandlePtr h(raw, &deconv_destroy);
            Work w(p, v);
            std::string e = forward(h.get(), w);
            if (!e.empty()) return e;
            if (w.dst != expected[size_t(v)]) return "iteration " + std::to_string(i) + ": result differs from serial";
        }
        return "";
    });
    uint64_t hits = 0, misses = 0, entries = 0;
    EXPECT_EQ(deconv_cache_stats(&hits, &misses, &entries), DECONV_OK);
    EXPECT_LE(entries, 1u);
    // Back to the default (64, or DECONV_CACHE_CAPACITY; see test_cache.cpp).
    const char *env = std::getenv("DECONV_CACHE_CAPACITY");
    EXPECT_EQ(deconv_cache_set_capacity(env && *env ? std::strtoull(env, nullptr, 10) : 64), DECONV_OK);
    expect_no_errors(errors);
}

// Results must not depend on what the calling thread ran before (the library reuses per-thread
// scratch memory between calls). The small problem has kernel taps that never meet an output,
// where a kernel that reads stale scratch memory shows it; the big one leaves its data behind.
TEST_P(Threads, ResultsDoNotDependOnThePreviousCallOfTheThread) {
    deconv_params small;
    deconv_params_init(&small);
    small.rank = 1;
    small.batch = 3;
    small.in_channels = 2;
    small.out_channels = 5;
    small.in_size[0] = 1;
    small.kernel[0] = 2;
    small.stride[0] = 3;
    small.pad[0] = 1;
    small.adj[0] = 1;
    small.dtype = GetParam().dtype;
    small.layout = GetParam().layout;
    small.mode = DECONV_TRAINING;
    const deconv_params big = problem(GetParam(), DECONV_TRAINING, 40);
    HandlePtr hs = create(small), hb = create(big);
    ASSERT_TRUE(hs && hb);

    Results clean, after;
    run_on_thread([&] {
        Work w(small, 0);
        EXPECT_EQ(forward(hs.get(), w), "");
        EXPECT_EQ(backward(hs.get(), w), "");
        clean.fwd = w.dst;
        clean.bwd = backward_outputs(w);
    });
    run_on_thread([&] {
        Work wb(big, 7), w(small, 0);
        for (int k = 0; k < 2; k++) {
            EXPECT_EQ(backward(hb.get(), wb), "");
            EXPECT_EQ(backward(hs.get(), w), "");
            EXPECT_EQ(forward(hb.get(), wb), "");
            EXPECT_EQ(forward(hs.get(), w), "");
        }
        after.fwd = w.dst;
        after.bwd = backward_outputs(w);
    });
    EXPECT_TRUE(after.fwd == clean.fwd) << "forward depends on the thread's history";
    EXPECT_TRUE(after.bwd == clean.bwd) << "backward depends on the thread's history (impl "
                                        << deconv_impl_name(hs.get(), DECONV_PASS_BACKWARD_WEIGHTS) << ")";
}

INSTANTIATE_TEST_SUITE_P(All, Threads,
                         ::testing::Values(Config{DECONV_F32, DECONV_CHANNELS_FIRST},
                                           Config{DECONV_F32, DECONV_CHANNELS_LAST},
                                           Config{DECONV_BF16, DECONV_CHANNELS_FIRST},
                                           Config{DECONV_BF16, DECONV_CHANNELS_LAST}),
                         name_of);

}  // namespace
