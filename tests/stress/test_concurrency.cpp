// Concurrency stress (issue 5, item 5): many threads on shared and on private handles, forward
// and backward mixed, several problems, f32 and bf16, both layouts; handles handed between
// threads; the primitive cache evicting and being cleared while others compute.
//
// Every call's output is compared bit for bit with a serial run of the same call. Each thread
// has inputs of its own (seeded by its index), so a scratchpad, workspace or packed-weight
// buffer shared between concurrent calls shows up as a wrong result, not just as a crash.
//
// The serial reference runs on a fresh std::thread, like the workers, so that both use the same
// OpenMP team size (oneDNN's work split, and with it the rounding, depends on it).
// Threads running concurrently use no gtest assertion: each returns its first failure as a
// message, which the main thread reports. (The serial phases run one thread at a time.)
// Calls per test (16 cases with bf16, 8 without): about 5,000, 3,000, 1,500 and 3,500, plus
// the churning thread's, plus 300 on new problems; small problems, a few seconds in all.
#include <deconv.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr uint64_t kSharedPackSeed = 1000; // weights packed into handles shared by all threads

using Bytes = std::vector<unsigned char>;
using HandlePtr = std::unique_ptr<deconv, decltype(&deconv_destroy)>;

// ---- problems ----

struct Case {
    deconv_params infer, train;
    std::string name;
};

deconv_params base_params() {
    deconv_params p;
    deconv_params_init(&p);
    return p;
}

// Small problems covering rank 1-3, groups, depthwise, stride, pad, dilate, adj, target_shape and
// no_bias, with channel counts that make oneDNN use blocked layouts (reorders in the library).
std::vector<deconv_params> problems() {
    std::vector<deconv_params> v;
    deconv_params p = base_params(); // 2D, adj, bias
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 8;
    p.out_channels = 16;
    p.in_size[0] = 5;
    p.in_size[1] = 4;
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    p.pad[0] = p.pad[1] = 1;
    p.adj[1] = 1;
    v.push_back(p);

    p = base_params(); // 1D, groups, dilation, no bias
    p.rank = 1;
    p.batch = 3;
    p.in_channels = 6;
    p.out_channels = 4;
    p.groups = 2;
    p.in_size[0] = 7;
    p.kernel[0] = 4;
    p.stride[0] = 3;
    p.pad[0] = 1;
    p.dilate[0] = 2;
    p.no_bias = 1;
    v.push_back(p);

    p = base_params(); // 3D, target_shape, bias
    p.rank = 3;
    p.batch = 1;
    p.in_channels = 4;
    p.out_channels = 8;
    p.in_size[0] = 3;
    p.in_size[1] = 3;
    p.in_size[2] = 2;
    p.kernel[0] = 2;
    p.kernel[1] = 3;
    p.kernel[2] = 2;
    p.stride[0] = 2;
    p.stride[1] = 1;
    p.stride[2] = 2;
    p.target_shape[0] = 5;
    p.target_shape[1] = 4;
    p.target_shape[2] = 3;
    v.push_back(p);

    p = base_params(); // 2D depthwise, bias
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 16;
    p.out_channels = 16;
    p.groups = 16;
    p.in_size[0] = p.in_size[1] = 6;
    p.kernel[0] = p.kernel[1] = 3;
    p.pad[0] = p.pad[1] = 1;
    v.push_back(p);
    return v;
}

std::vector<Case> all_cases() {
    std::vector<Case> cases;
    std::vector<deconv_dtype> dtypes{DECONV_F32};
    dtypes.push_back(DECONV_BF16);
    const std::vector<deconv_params> ps = problems();
    for (size_t i = 0; i < ps.size(); i++)
        for (deconv_dtype dt : dtypes)
            for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST}) {
                Case c;
                c.infer = ps[i];
                c.infer.dtype = dt;
                c.infer.layout = l;
                c.infer.mode = DECONV_INFERENCE;
                c.train = c.infer;
                c.train.mode = DECONV_TRAINING;
                c.name = "problem " + std::to_string(i) + (dt == DECONV_F32 ? " f32" : " bf16") +
                         (l == DECONV_CHANNELS_FIRST ? " channels-first" : " channels-last");
                cases.push_back(c);
            }
    return cases;
}

// ---- data ----

size_t elem_size(const deconv_params &p) { return p.dtype == DECONV_F32 ? 4 : 2; }

// Deterministic values in [-1, 1) from a seed, as raw bytes of the problem's data type.
Bytes values(const deconv_params &p, int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> f(static_cast<size_t>(n));
    for (float &x : f) x = float(int64_t(rng() % 2048) - 1024) / 1024.0f;
    Bytes b(f.size() * elem_size(p));
    if (p.dtype == DECONV_F32) {
        if (!b.empty()) std::memcpy(b.data(), f.data(), b.size());
    } else {
        std::vector<uint16_t> h(f.size());
        deconv_f32_to_bf16(f.data(), h.data(), f.size());
        if (!b.empty()) std::memcpy(b.data(), h.data(), b.size());
    }
    return b;
}

// Inputs of one thread for one problem, and the prior content of the outputs for ADD requests.
struct Inputs {
    Bytes src, weights, bias, diff_dst;
    Bytes prior_dst, prior_diff_src, prior_diff_weights, prior_diff_bias;
};

Inputs make_inputs(const deconv_params &p, uint64_t seed) {
    deconv_sizes sz{};
    deconv_buffer_sizes(&p, &sz);
    Inputs in;
    const uint64_t s = seed * 16;
    in.src = values(p, sz.src, s + 1);
    in.weights = values(p, sz.weights, s + 2);
    in.bias = values(p, sz.bias, s + 3);
    in.diff_dst = values(p, sz.dst, s + 4);
    in.prior_dst = values(p, sz.dst, s + 5);
    in.prior_diff_src = values(p, sz.src, s + 6);
    in.prior_diff_weights = values(p, sz.weights, s + 7);
    in.prior_diff_bias = values(p, sz.bias, s + 8);
    return in;
}

const void *or_null(const Bytes &b) { return b.empty() ? nullptr : b.data(); }
void *or_null(Bytes &b) { return b.empty() ? nullptr : b.data(); }

// ---- handles and calls ----

struct Handles {
    HandlePtr infer{nullptr, &deconv_destroy}, train{nullptr, &deconv_destroy};
};

std::string create_handles(const Case &c, uint64_t pack_seed, Handles &h) {
    deconv *a = nullptr, *b = nullptr;
    if (deconv_create(&c.infer, &a) != DECONV_OK) return c.name + ": create (inference): " + deconv_last_error();
    h.infer.reset(a);
    if (deconv_create(&c.train, &b) != DECONV_OK) return c.name + ": create (training): " + deconv_last_error();
    h.train.reset(b);
    const Inputs packed = make_inputs(c.infer, pack_seed);
    if (deconv_set_weights(a, packed.weights.data(), or_null(packed.bias)) != DECONV_OK)
        return c.name + ": set_weights: " + deconv_last_error();
    return "";
}

// The kinds of call mixed on every problem. Backward calls ask for all three outputs (diff_bias
// only when the problem has a bias) with write, add and mixed requests, plus a partial one.
enum Kind {
    kForwardPacked,        // inference handle, weights of deconv_set_weights, write
    kForwardPackedAdd,     // the same, add
    kForwardExplicit,      // inference handle, weights passed, write
    kForwardTrainingAdd,   // training handle, weights passed, add
    kBackwardWrite,        // diff_src, diff_weights, diff_bias: write
    kBackwardAdd,          // all three: add
    kBackwardMixed,        // diff_src add, diff_weights write, diff_bias add
    kBackwardPartial,      // diff_bias alone (write), or diff_src alone without a bias
    kKinds
};

const char *kind_name(int k) {
    static const char *names[] = {"forward packed write",     "forward packed add",  "forward explicit write",
                                  "forward training add",     "backward write",      "backward add",
                                  "backward mixed",           "backward partial"};
    return names[k];
}

// Runs one call; its outputs (concatenated) go to `out`. Returns "" or the failure.
std::string run_call(const Case &c, const Handles &h, const Inputs &in, int kind, Bytes &out) {
    const bool bias = !c.infer.no_bias;
    deconv_status s = DECONV_OK;
    if (kind <= kForwardTrainingAdd) {
        const bool add = kind == kForwardPackedAdd || kind == kForwardTrainingAdd;
        const bool packed = kind == kForwardPacked || kind == kForwardPackedAdd;
        deconv *hd = kind == kForwardTrainingAdd ? h.train.get() : h.infer.get();
        if (add)
            out = in.prior_dst;
        else
            out.assign(in.prior_dst.size(), 0x7f); // garbage that WRITE must overwrite
        s = deconv_forward(hd, in.src.data(), packed ? nullptr : in.weights.data(),
                           packed ? nullptr : or_null(in.bias), out.data(), add ? DECONV_REQ_ADD : DECONV_REQ_WRITE);
    } else {
        Bytes ds = in.prior_diff_src, dw = in.prior_diff_weights, db = in.prior_diff_bias;
        deconv_req rs = DECONV_REQ_WRITE, rw = DECONV_REQ_WRITE, rb = bias ? DECONV_REQ_WRITE : DECONV_REQ_NULL;
        if (kind == kBackwardAdd) {
            rs = rw = DECONV_REQ_ADD;
            rb = bias ? DECONV_REQ_ADD : DECONV_REQ_NULL;
        }
        if (kind == kBackwardMixed) {
            rs = DECONV_REQ_ADD;
            rb = bias ? DECONV_REQ_ADD : DECONV_REQ_NULL;
        }
        if (kind == kBackwardPartial) {
            rw = DECONV_REQ_NULL;
            rs = bias ? DECONV_REQ_NULL : DECONV_REQ_WRITE;
        }
        s = deconv_backward(h.train.get(), in.src.data(), in.weights.data(), in.diff_dst.data(),
                            rs == DECONV_REQ_NULL ? nullptr : or_null(ds), rs,
                            rw == DECONV_REQ_NULL ? nullptr : or_null(dw), rw,
                            rb == DECONV_REQ_NULL ? nullptr : or_null(db), rb);
        out = ds;
        out.insert(out.end(), dw.begin(), dw.end());
        out.insert(out.end(), db.begin(), db.end());
    }
    if (s != DECONV_OK)
        return c.name + ": " + kind_name(kind) + ": " + deconv_status_string(s) + ": " + deconv_last_error();
    return "";
}

// expected[case][kind] for one input seed and one set of handles.
using Expected = std::vector<std::vector<Bytes>>;

std::string compute_expected(const std::vector<Case> &cases, const std::vector<Handles> &handles,
                             const std::vector<Inputs> &inputs, Expected &e) {
    e.assign(cases.size(), std::vector<Bytes>(kKinds));
    for (size_t ci = 0; ci < cases.size(); ci++)
        for (int k = 0; k < kKinds; k++) {
            std::string err = run_call(cases[ci], handles[ci], inputs[ci], k, e[ci][size_t(k)]);
            if (!err.empty()) return err;
        }
    return "";
}

// Runs one call and compares with the serial result.
std::string check_call(const Case &c, const Handles &h, const Inputs &in, int kind, const Bytes &expected,
                       const std::string &where) {
    Bytes out;
    std::string err = run_call(c, h, in, kind, out);
    if (!err.empty()) return where + ": " + err;
    if (out != expected) return where + ": " + c.name + ": " + kind_name(kind) + ": result differs from the serial run";
    return "";
}

void on_fresh_thread(const std::function<void()> &f) {
    std::thread t(f);
    t.join();
}

// Runs body(t) for t < n on n threads released together; returns each thread's failure ("" = none).
std::vector<std::string> run_concurrently(int n, const std::function<std::string(int)> &body) {
    std::vector<std::string> errors(static_cast<size_t>(n));
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < n; t++)
        ts.emplace_back([&, t] {
            ready++;
            while (ready.load() < n) std::this_thread::yield(); // maximise overlap
            errors[size_t(t)] = body(t);
        });
    for (auto &t : ts) t.join();
    return errors;
}

void expect_no_errors(const std::vector<std::string> &errors) {
    for (size_t t = 0; t < errors.size(); t++) EXPECT_EQ(errors[t], "") << "thread " << t;
}

std::vector<Inputs> inputs_for(const std::vector<Case> &cases, uint64_t seed) {
    std::vector<Inputs> v;
    for (const Case &c : cases) v.push_back(make_inputs(c.train, seed));
    return v;
}

// The order in which thread t visits (case, kind) in round r: every thread walks the cases in
// the same order (so all threads are on the same handles at about the same time) but starts at
// a different kind (so forward runs on a handle while backward runs on it elsewhere).
template <typename Visit>
std::string walk(size_t n_cases, int t, int round, Visit visit) {
    for (size_t i = 0; i < n_cases; i++) {
        const size_t ci = (i + size_t(round) * 3) % n_cases;
        for (int j = 0; j < kKinds; j++) {
            const int k = (j + t + round) % kKinds;
            std::string err = visit(ci, k);
            if (!err.empty()) return err;
        }
    }
    return "";
}

class Concurrency : public ::testing::Test {
protected:
    void SetUp() override {
        capacity_ = deconv_cache_capacity();
        cases_ = all_cases();
        start_ = std::chrono::steady_clock::now();
    }
    void TearDown() override {
        EXPECT_EQ(deconv_cache_set_capacity(capacity_), DECONV_OK);
        EXPECT_EQ(deconv_cache_capacity(), capacity_);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::printf("%zu cases, %llu calls checked, %.2f s\n", cases_.size(),
                    static_cast<unsigned long long>(calls_.load()), s);
    }

    // Handles for every case, packed with `pack_seed`, created on a fresh thread.
    std::vector<Handles> shared_handles(uint64_t pack_seed) {
        std::vector<Handles> hs(cases_.size());
        on_fresh_thread([&] {
            for (size_t ci = 0; ci < cases_.size(); ci++) {
                std::string err = create_handles(cases_[ci], pack_seed, hs[ci]);
                EXPECT_EQ(err, "");
            }
        });
        return hs;
    }

    size_t capacity_ = 0;
    std::vector<Case> cases_;
    std::atomic<uint64_t> calls_{0};
    std::chrono::steady_clock::time_point start_;
};

// 8 threads share one inference and one training handle per case; each thread has its own
// inputs. The packed weights are the same for all (set before the threads start).
TEST_F(Concurrency, EightThreadsShareOneHandlePerProblem) {
    constexpr int kRounds = 5;
    std::vector<Handles> hs = shared_handles(kSharedPackSeed);
    if (HasFailure()) return;
    std::vector<std::vector<Inputs>> inputs(kThreads);
    std::vector<Expected> expected(kThreads);
    on_fresh_thread([&] {
        for (int t = 0; t < kThreads; t++) {
            inputs[size_t(t)] = inputs_for(cases_, uint64_t(t));
            EXPECT_EQ(compute_expected(cases_, hs, inputs[size_t(t)], expected[size_t(t)]), "");
        }
    });
    if (HasFailure()) return;

    expect_no_errors(run_concurrently(kThreads, [&](int t) -> std::string {
        for (int r = 0; r < kRounds; r++) {
            std::string err = walk(cases_.size(), t, r, [&](size_t ci, int k) {
                calls_++;
                return check_call(cases_[ci], hs[ci], inputs[size_t(t)][ci], k, expected[size_t(t)][ci][size_t(k)],
                                  "round " + std::to_string(r));
            });
            if (!err.empty()) return err;
        }
        return "";
    }));
}

// 8 threads with handles of their own (equal problems across threads, so the shared cache is hit
// concurrently), packed with their own weights; at every round each thread destroys and
// recreates its handles while the others compute.
TEST_F(Concurrency, EightThreadsWithHandlesOfTheirOwn) {
    constexpr int kRounds = 3;
    std::vector<std::vector<Inputs>> inputs(kThreads);
    std::vector<Expected> expected(kThreads);
    for (int t = 0; t < kThreads; t++) {
        std::vector<Handles> own = shared_handles(uint64_t(t)); // the same packing the thread will do
        if (HasFailure()) return;
        on_fresh_thread([&] {
            inputs[size_t(t)] = inputs_for(cases_, uint64_t(t));
            EXPECT_EQ(compute_expected(cases_, own, inputs[size_t(t)], expected[size_t(t)]), "");
        });
        if (HasFailure()) return;
    }

    expect_no_errors(run_concurrently(kThreads, [&](int t) -> std::string {
        for (int r = 0; r < kRounds; r++) {
            std::vector<Handles> own(cases_.size());
            for (size_t ci = 0; ci < cases_.size(); ci++) {
                std::string err = create_handles(cases_[ci], uint64_t(t), own[ci]);
                if (!err.empty()) return err;
            }
            std::string err = walk(cases_.size(), t, r, [&](size_t ci, int k) {
                calls_++;
                return check_call(cases_[ci], own[ci], inputs[size_t(t)][ci], k, expected[size_t(t)][ci][size_t(k)],
                                  "round " + std::to_string(r));
            });
            if (!err.empty()) return err;
        }
        return "";
    }));
}

// Handles created (and packed) on one thread, used only on a second one after the first has
// exited, and destroyed on a third. Four such chains run at once, each with its own inputs.
TEST_F(Concurrency, HandleCreatedOnOneThreadUsedOnAnotherDestroyedOnAThird) {
    constexpr int kChains = 4;
    // The serial reference: equal problems, equal packing, separate handles.
    std::vector<Handles> ref = shared_handles(kSharedPackSeed);
    if (HasFailure()) return;
    std::vector<std::vector<Inputs>> inputs(kChains);
    std::vector<Expected> expected(kChains);
    on_fresh_thread([&] {
        for (int t = 0; t < kChains; t++) {
            inputs[size_t(t)] = inputs_for(cases_, uint64_t(t) + 50);
            EXPECT_EQ(compute_expected(cases_, ref, inputs[size_t(t)], expected[size_t(t)]), "");
        }
    });
    ref.clear();
    if (HasFailure()) return;

    expect_no_errors(run_concurrently(kChains, [&](int t) -> std::string {
        std::vector<Handles> hs(cases_.size());
        std::string err;
        std::thread creator([&] {
            for (size_t ci = 0; ci < cases_.size() && err.empty(); ci++)
                err = create_handles(cases_[ci], kSharedPackSeed, hs[ci]);
        });
        creator.join(); // its thread-local state is gone before the handles are used
        if (!err.empty()) return "creator: " + err;
        std::thread user([&] {
            for (int r = 0; r < 3 && err.empty(); r++)
                err = walk(cases_.size(), t, r, [&](size_t ci, int k) {
                    calls_++;
                    return check_call(cases_[ci], hs[ci], inputs[size_t(t)][ci], k,
                                      expected[size_t(t)][ci][size_t(k)], "user");
                });
        });
        user.join();
        if (!err.empty()) return err;
        std::thread destroyer([&] { hs.clear(); });
        destroyer.join();
        return "";
    }));
}

// Distinct problems (none equal to a case) for the thread that churns the cache.
std::vector<deconv_params> churn_problems() {
    std::vector<deconv_params> v;
    for (int i = 0; i < 24; i++) {
        deconv_params p = base_params();
        p.rank = 1 + i % 3;
        p.batch = 1;
        p.in_channels = 4 + 4 * (i % 2);
        p.out_channels = 8;
        for (int d = 0; d < p.rank; d++) {
            p.in_size[d] = 3 + (i / 3) % 4;
            p.kernel[d] = 2 + d % 2;
            p.stride[d] = 1 + (i / 12);
        }
        p.dtype = i % 4 == 3 ? DECONV_BF16 : DECONV_F32;
        p.layout = (i / 2) % 2 ? DECONV_CHANNELS_LAST : DECONV_CHANNELS_FIRST;
        p.mode = i % 5 == 0 ? DECONV_TRAINING : DECONV_INFERENCE;
        v.push_back(p);
    }
    return v;
}

// One thread sets the capacity to 0, 1 and 2 in turn, clears the cache, and creates, runs and
// destroys handles of many problems (also of the cases' problems, so that their keys are
// inserted and evicted concurrently), while the other threads compute on long-lived handles
// whose primitives were evicted at the start, and on fresh handles they create meanwhile.
TEST_F(Concurrency, CacheEvictionWhileOtherThreadsCompute) {
    constexpr int kWorkers = kThreads - 1;
    constexpr int kRounds = 3;
    std::vector<Handles> hs = shared_handles(kSharedPackSeed);
    if (HasFailure()) return;
    std::vector<std::vector<Inputs>> inputs(kWorkers);
    std::vector<Expected> expected(kWorkers);
    on_fresh_thread([&] {
        for (int t = 0; t < kWorkers; t++) {
            inputs[size_t(t)] = inputs_for(cases_, uint64_t(t) + 20);
            EXPECT_EQ(compute_expected(cases_, hs, inputs[size_t(t)], expected[size_t(t)]), "");
        }
    });
    if (HasFailure()) return;
    ASSERT_EQ(deconv_cache_set_capacity(0), DECONV_OK); // every primitive the handles hold is evicted
    uint64_t entries = 99;
    ASSERT_EQ(deconv_cache_stats(nullptr, nullptr, &entries), DECONV_OK);
    ASSERT_EQ(entries, 0u);

    const std::vector<deconv_params> churn = churn_problems();
    std::atomic<int> workers_left{kWorkers};
    std::atomic<int> churn_loops{0};
    expect_no_errors(run_concurrently(kThreads, [&](int t) -> std::string {
        if (t == kWorkers) { // the churning thread
            std::string err;
            for (int i = 0; workers_left.load() > 0 || i < 10; i++) {
                const size_t capacity = size_t(i % 3);
                if (deconv_cache_set_capacity(capacity) != DECONV_OK) return "set_capacity failed";
                if (i % 4 == 3 && deconv_cache_clear() != DECONV_OK) return "clear failed";
                deconv_params p = churn[size_t(i) % churn.size()];
                if (i % 3 == 2) p = (i / 3) % 2 ? cases_[size_t(i) % cases_.size()].train
                                                : cases_[size_t(i) % cases_.size()].infer;
                deconv *h = nullptr;
                if (deconv_create(&p, &h) != DECONV_OK) return std::string("churn create: ") + deconv_last_error();
                HandlePtr hp(h, &deconv_destroy);
                const Inputs in = make_inputs(p, uint64_t(i));
                Bytes dst(in.prior_dst.size());
                if (deconv_forward(h, in.src.data(), in.weights.data(), or_null(in.bias), dst.data(),
                                   DECONV_REQ_WRITE) != DECONV_OK)
                    return std::string("churn forward: ") + deconv_last_error();
                // Only this thread changes the capacity, so the bound holds at every moment.
                uint64_t n = 0;
                if (deconv_cache_stats(nullptr, nullptr, &n) != DECONV_OK) return "stats failed";
                if (n > capacity)
                    return "cache has " + std::to_string(n) + " entries above capacity " + std::to_string(capacity);
                churn_loops++;
            }
            return err;
        }
        std::string err;
        for (int r = 0; r < kRounds && err.empty(); r++)
            err = walk(cases_.size(), t, r, [&](size_t ci, int k) -> std::string {
                calls_++;
                std::string e = check_call(cases_[ci], hs[ci], inputs[size_t(t)][ci], k,
                                           expected[size_t(t)][ci][size_t(k)], "long-lived handle");
                if (!e.empty() || k != (t + r) % kKinds) return e;
                // Once per case and round: a fresh handle, whose primitives come from a cache
                // that is being evicted and cleared, must give the same bits.
                Handles fresh;
                e = create_handles(cases_[ci], kSharedPackSeed, fresh);
                for (int kk = 0; kk < kKinds && e.empty(); kk += 3) {
                    calls_++;
                    e = check_call(cases_[ci], fresh, inputs[size_t(t)][ci], kk, expected[size_t(t)][ci][size_t(kk)],
                                   "fresh handle");
                }
                return e;
            });
        workers_left--;
        return err;
    }));
    std::printf("cache churn: %d create/forward/destroy loops\n", churn_loops.load());
    EXPECT_GE(churn_loops.load(), 10);
}

// Handles of one problem nobody has used yet, created by 8 threads at the same moment, must
// compute the same bits (whatever the library decides when it first builds a problem's
// primitives, every handle of that problem must get the same decision). With the cache disabled
// (each creation builds its own plans), with one entry (the passes of a training handle evict
// each other while other threads still build theirs) and with the usual capacity. The problem
// has a long reduction (256 input channels, 5x5 kernel), where differently ordered sums differ.
TEST_F(Concurrency, HandlesOfANewProblemCreatedAtOnceComputeTheSame) {
    constexpr int kRounds = 3;
    std::vector<deconv_dtype> dtypes{DECONV_F32};
    dtypes.push_back(DECONV_BF16);
    int fresh = 0; // makes every problem one this process has not seen
    for (size_t capacity : {size_t(0), size_t(1), std::max<size_t>(capacity_, 16)}) {
        ASSERT_EQ(deconv_cache_set_capacity(capacity), DECONV_OK);
        for (deconv_dtype dt : dtypes)
            for (int r = 0; r < kRounds; r++) {
                deconv_params p = base_params();
                p.in_channels = 256;
                p.out_channels = 16;
                p.in_size[0] = 3 + fresh++;
                p.in_size[1] = 7;
                p.kernel[0] = p.kernel[1] = 5;
                p.stride[0] = p.stride[1] = 2;
                p.dtype = dt;
                p.mode = DECONV_TRAINING;
                Case c{p, p, std::string("new problem (capacity ") + std::to_string(capacity) + ", " +
                                 (dt == DECONV_F32 ? "f32" : "bf16") + ", in_size[0] = " +
                                 std::to_string(p.in_size[0]) + ")"};
                const Inputs in = make_inputs(p, 77);
                std::vector<Bytes> out(kThreads);
                std::vector<std::string> route(kThreads);
                expect_no_errors(run_concurrently(kThreads, [&](int t) -> std::string {
                    Handles h;
                    deconv *raw = nullptr;
                    if (deconv_create(&p, &raw) != DECONV_OK) return c.name + ": create: " + deconv_last_error();
                    h.train.reset(raw);
                    for (int pass = 0; pass < 3; pass++) {
                        const char *name = deconv_impl_name(raw, deconv_pass(pass));
                        route[size_t(t)] += std::string(name ? name : "(none)") + " ";
                    }
                    Bytes fwd, bwd;
                    std::string err = run_call(c, h, in, kForwardTrainingAdd, fwd);
                    if (err.empty()) err = run_call(c, h, in, kBackwardWrite, bwd);
                    out[size_t(t)] = fwd;
                    out[size_t(t)].insert(out[size_t(t)].end(), bwd.begin(), bwd.end());
                    calls_ += 2;
                    return err;
                }));
                for (int t = 1; t < kThreads; t++)
                    EXPECT_TRUE(out[size_t(t)] == out[0])
                        << c.name << ": thread " << t << " computed other bits than thread 0; impl (forward, "
                        << "backward data, backward weights): thread 0: " << route[0] << "; thread " << t << ": "
                        << route[size_t(t)];
            }
    }
}

} // namespace
