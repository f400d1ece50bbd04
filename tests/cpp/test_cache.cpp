// The process-wide primitive cache, through the C API: hits on equal problems, misses on any
// difference, the capacity bound, least-recently-used eviction, capacity 0, and that handles
// keep working after their primitives were evicted, and one-channel layouts that are the same.
//
// Entry accounting (what the exact numbers below rely on): a cache entry is one pass's
// primitive. An inference handle uses 1 entry (forward); a training handle uses 3 (forward,
// backward data, backward weights). Creating a handle looks up each of its passes once.
// The cache is process-wide, so every test starts from deconv_cache_clear() with capacity 64 and
// restores the default capacity (64, or DECONV_CACHE_CAPACITY from the environment) when it ends.
#include <deconv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using HandlePtr = std::unique_ptr<deconv, decltype(&deconv_destroy)>;

struct Stats {
    uint64_t hits = 0, misses = 0, entries = 0;
};

Stats stats() {
    Stats s;
    EXPECT_EQ(deconv_cache_stats(&s.hits, &s.misses, &s.entries), DECONV_OK) << deconv_last_error();
    return s;
}

// The library offers no capacity getter, so the default is recomputed the way deconv.h states it.
size_t default_capacity() {
    const char *env = std::getenv("DECONV_CACHE_CAPACITY");
    if (env && *env) {
        char *end = nullptr;
        unsigned long long v = std::strtoull(env, &end, 10);
        if (*end == '\0') return size_t(v);
    }
    return 64;
}

// A small valid problem; `variant` changes the input width so that variants are distinct.
deconv_params problem(int variant = 0, deconv_mode mode = DECONV_INFERENCE) {
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 2;
    p.batch = 2;
    p.in_channels = 4;
    p.out_channels = 6;
    p.groups = 1;
    p.in_size[0] = 5;
    p.in_size[1] = 4 + variant;
    p.kernel[0] = 3;
    p.kernel[1] = 3;
    p.stride[0] = 2;
    p.stride[1] = 2;
    p.pad[0] = 1;
    p.pad[1] = 1;
    p.mode = mode;
    return p;
}

HandlePtr create(const deconv_params &p) {
    deconv *h = nullptr;
    deconv_status s = deconv_create(&p, &h);
    EXPECT_EQ(s, DECONV_OK) << deconv_last_error();
    return HandlePtr(s == DECONV_OK ? h : nullptr, &deconv_destroy);
}

deconv_sizes sizes(const deconv_params &p) {
    deconv_sizes sz{};
    EXPECT_EQ(deconv_buffer_sizes(&p, &sz), DECONV_OK) << deconv_last_error();
    return sz;
}

std::vector<float> data(int64_t n, double phase) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); i++) v[i] = float(std::sin(0.3 * double(i) + phase));
    return v;
}

// Forward output of an f32 handle on fixed inputs (weights passed explicitly).
std::vector<float> run_forward(deconv *h, const deconv_params &p) {
    deconv_sizes sz = sizes(p);
    std::vector<float> src = data(sz.src, 0.1), w = data(sz.weights, 0.2), b = data(sz.bias, 0.3);
    std::vector<float> dst(static_cast<size_t>(sz.dst), -1.f);
    EXPECT_EQ(deconv_forward(h, src.data(), w.data(), p.no_bias ? nullptr : b.data(), dst.data(), DECONV_REQ_WRITE),
              DECONV_OK)
        << deconv_last_error();
    return dst;
}

// diff_src, diff_weights and diff_bias of an f32 training handle, concatenated.
std::vector<float> run_backward(deconv *h, const deconv_params &p) {
    deconv_sizes sz = sizes(p);
    std::vector<float> src = data(sz.src, 0.1), w = data(sz.weights, 0.2), dd = data(sz.dst, 0.4);
    std::vector<float> ds(static_cast<size_t>(sz.src)), dw(static_cast<size_t>(sz.weights)),
        db(static_cast<size_t>(sz.bias));
    EXPECT_EQ(deconv_backward(h, src.data(), w.data(), dd.data(), ds.data(), DECONV_REQ_WRITE, dw.data(),
                              DECONV_REQ_WRITE, db.data(), DECONV_REQ_WRITE),
              DECONV_OK)
        << deconv_last_error();
    ds.insert(ds.end(), dw.begin(), dw.end());
    ds.insert(ds.end(), db.begin(), db.end());
    return ds;
}

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

#define EXPECT_STATS(h, m, e)                                                                   \
    do {                                                                                        \
        Stats s_ = stats();                                                                     \
        EXPECT_EQ(s_.hits, uint64_t(h)) << "hits";                                              \
        EXPECT_EQ(s_.misses, uint64_t(m)) << "misses";                                          \
        EXPECT_EQ(s_.entries, uint64_t(e)) << "entries";                                        \
    } while (0)

class Cache : public ::testing::Test {
  protected:
    // A known capacity with room for every test's entries, whatever DECONV_CACHE_CAPACITY says.
    void SetUp() override {
        ASSERT_EQ(deconv_cache_set_capacity(64), DECONV_OK) << deconv_last_error();
        ASSERT_EQ(deconv_cache_clear(), DECONV_OK) << deconv_last_error();
    }
    void TearDown() override {
        EXPECT_EQ(deconv_cache_set_capacity(default_capacity()), DECONV_OK);
        EXPECT_EQ(deconv_cache_clear(), DECONV_OK);
    }
};

TEST_F(Cache, ClearZeroesCountersAndEntries) {
    HandlePtr a = create(problem(0));
    HandlePtr b = create(problem(0));
    EXPECT_STATS(1, 1, 1);
    ASSERT_EQ(deconv_cache_clear(), DECONV_OK);
    EXPECT_STATS(0, 0, 0);
    // The handles keep their primitives.
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(bit_equal(run_forward(a.get(), problem(0)), run_forward(b.get(), problem(0))));
}

TEST_F(Cache, EqualProblemHits) {
    HandlePtr a = create(problem(0));
    EXPECT_STATS(0, 1, 1);
    HandlePtr b = create(problem(0));
    EXPECT_STATS(1, 1, 1);
    // Entries outlive the handles that created them.
    a.reset();
    b.reset();
    HandlePtr c = create(problem(0));
    EXPECT_STATS(2, 1, 1);
}

TEST_F(Cache, TrainingHandleUsesThreeEntries) {
    HandlePtr a = create(problem(0, DECONV_TRAINING));
    EXPECT_STATS(0, 3, 3);
    HandlePtr b = create(problem(0, DECONV_TRAINING));
    EXPECT_STATS(3, 3, 3);
}

// Every field that changes the computation is part of the key: changing it is a miss.
TEST_F(Cache, EveryFieldIsPartOfTheKey) {
    std::vector<std::pair<std::string, deconv_params>> variants;
    auto add = [&](const std::string &name, void (*edit)(deconv_params &)) {
        deconv_params p = problem(0);
        edit(p);
        variants.emplace_back(name, p);
    };
    add("base", [](deconv_params &) {});
    add("batch", [](deconv_params &p) { p.batch = 3; });
    add("in_channels", [](deconv_params &p) { p.in_channels = 2; });
    add("out_channels", [](deconv_params &p) { p.out_channels = 4; });
    add("groups", [](deconv_params &p) { p.groups = 2; });
    add("in_size[0]", [](deconv_params &p) { p.in_size[0] = 6; });
    add("in_size[1]", [](deconv_params &p) { p.in_size[1] = 5; });
    add("kernel[0]", [](deconv_params &p) { p.kernel[0] = 2; });
    add("kernel[1]", [](deconv_params &p) { p.kernel[1] = 4; });
    add("stride[1]", [](deconv_params &p) { p.stride[1] = 1; });
    add("pad[0]", [](deconv_params &p) { p.pad[0] = 0; });
    add("dilate[1]", [](deconv_params &p) { p.dilate[1] = 2; });
    add("adj[0]", [](deconv_params &p) { p.adj[0] = 1; });
    add("target_shape", [](deconv_params &p) { p.target_shape[0] = 10, p.target_shape[1] = 8; });
    add("no_bias", [](deconv_params &p) { p.no_bias = 1; });
    add("layout", [](deconv_params &p) { p.layout = DECONV_CHANNELS_LAST; });
    add("rank", [](deconv_params &p) { p.rank = 1; });
    add("rank 3", [](deconv_params &p) { p.rank = 3, p.in_size[2] = 3, p.kernel[2] = 2; });
    add("dtype", [](deconv_params &p) { p.dtype = DECONV_BF16; });

    std::vector<HandlePtr> keep;
    uint64_t n = 0;
    for (const auto &v : variants) {
        SCOPED_TRACE(v.first);
        keep.push_back(create(v.second));
        n++;
        EXPECT_STATS(0, n, n);
    }
    // mode: a training handle's three passes are new entries (its forward is not the inference one).
    keep.push_back(create(problem(0, DECONV_TRAINING)));
    EXPECT_STATS(0, n + 3, n + 3);
    // Now every variant is a hit.
    for (const auto &v : variants) {
        SCOPED_TRACE(v.first);
        keep.push_back(create(v.second));
    }
    EXPECT_STATS(n, n + 3, n + 3);
}

// The key is the problem, not the bytes of deconv_params: entries past `rank` are unused, and a
// target_shape is only another way of giving pad and adj.
TEST_F(Cache, EquivalentDescriptionsShareAnEntry) {
    HandlePtr a = create(problem(0));
    EXPECT_STATS(0, 1, 1);
    deconv_params p = problem(0);
    p.in_size[2] = 7, p.kernel[2] = 5, p.stride[2] = 3, p.pad[2] = 2;
    HandlePtr b = create(p);
    EXPECT_STATS(1, 1, 1);
    // problem(0): out = 2*(5-1)+3-2 = 9 and 2*(4-1)+3-2 = 7 with pad 1, adj 0.
    p = problem(0);
    p.target_shape[0] = 9, p.target_shape[1] = 7;
    p.pad[0] = 99, p.adj[1] = 1;  // ignored when target_shape is given
    HandlePtr c = create(p);
    EXPECT_STATS(2, 1, 1);
}

// One channel in and out: channels-last data is the same memory as channels-first, and the
// problem is the same (the same routes, the same entry); with more channels on either side the
// layouts differ.
TEST_F(Cache, OneChannelLayoutsShareAnEntry) {
    deconv_params first = problem(0);
    first.in_channels = first.out_channels = 1;
    deconv_params last = first;
    last.layout = DECONV_CHANNELS_LAST;
    HandlePtr a = create(first);
    HandlePtr b = create(last);
    EXPECT_STATS(1, 1, 1);
    ASSERT_TRUE(a && b);
    EXPECT_STREQ(deconv_impl_name(a.get(), DECONV_PASS_FORWARD), deconv_impl_name(b.get(), DECONV_PASS_FORWARD));
    EXPECT_TRUE(bit_equal(run_forward(a.get(), first), run_forward(b.get(), last)));
    last.out_channels = 2;
    HandlePtr c = create(last);
    EXPECT_STATS(1, 2, 2);
}

TEST_F(Cache, CapacityBoundsEntries) {
    ASSERT_EQ(deconv_cache_set_capacity(2), DECONV_OK);
    std::vector<HandlePtr> hs;
    for (int i = 0; i < 5; i++) {
        hs.push_back(create(problem(i)));
        EXPECT_STATS(0, i + 1, std::min(i + 1, 2));
    }
    // Every handle works, evicted or not.
    for (int i = 0; i < 5; i++) {
        ASSERT_TRUE(hs[size_t(i)]);
        std::vector<float> out = run_forward(hs[size_t(i)].get(), problem(i));
        HandlePtr fresh = create(problem(i));
        ASSERT_TRUE(fresh);
        EXPECT_TRUE(bit_equal(out, run_forward(fresh.get(), problem(i)))) << "problem " << i;
    }
    EXPECT_LE(stats().entries, 2u);
}

TEST_F(Cache, TrainingHandleRespectsTheBound) {
    ASSERT_EQ(deconv_cache_set_capacity(2), DECONV_OK);
    HandlePtr t = create(problem(0, DECONV_TRAINING));
    EXPECT_STATS(0, 3, 2);
    ASSERT_TRUE(t);
    EXPECT_FALSE(run_backward(t.get(), problem(0, DECONV_TRAINING)).empty());
}

TEST_F(Cache, LeastRecentlyUsedIsEvicted) {
    ASSERT_EQ(deconv_cache_set_capacity(2), DECONV_OK);
    const deconv_params A = problem(0), B = problem(1), C = problem(2);
    HandlePtr a = create(A), b = create(B);
    EXPECT_STATS(0, 2, 2);
    HandlePtr a2 = create(A);  // touches A: B is now the least recently used
    EXPECT_STATS(1, 2, 2);
    HandlePtr c = create(C);  // evicts B
    EXPECT_STATS(1, 3, 2);
    HandlePtr a3 = create(A);  // A survived
    EXPECT_STATS(2, 3, 2);
    HandlePtr b2 = create(B);  // B did not (and now evicts C, the least recently used)
    EXPECT_STATS(2, 4, 2);
    HandlePtr a4 = create(A);
    EXPECT_STATS(3, 4, 2);
}

TEST_F(Cache, CapacityZeroDisablesCaching) {
    ASSERT_EQ(deconv_cache_set_capacity(0), DECONV_OK);
    HandlePtr a = create(problem(0)), b = create(problem(0));
    HandlePtr t = create(problem(0, DECONV_TRAINING));
    Stats s = stats();
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.entries, 0u);
    ASSERT_TRUE(a && b && t);
    std::vector<float> out = run_forward(a.get(), problem(0));
    EXPECT_TRUE(bit_equal(out, run_forward(b.get(), problem(0))));
    EXPECT_FALSE(run_backward(t.get(), problem(0, DECONV_TRAINING)).empty());
    // Caching resumes when a capacity is set again.
    ASSERT_EQ(deconv_cache_set_capacity(4), DECONV_OK);
    HandlePtr c = create(problem(0)), d = create(problem(0));
    s = stats();
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(s.entries, 1u);
    ASSERT_TRUE(c);
    EXPECT_TRUE(bit_equal(out, run_forward(c.get(), problem(0))));
}

TEST_F(Cache, ShrinkingEvictsAtOnceKeepingTheMostRecent) {
    HandlePtr a = create(problem(0)), b = create(problem(1)), c = create(problem(2));
    EXPECT_STATS(0, 3, 3);
    ASSERT_EQ(deconv_cache_set_capacity(1), DECONV_OK);
    EXPECT_STATS(0, 3, 1);
    HandlePtr c2 = create(problem(2));
    EXPECT_STATS(1, 3, 1);
    HandlePtr a2 = create(problem(0));
    EXPECT_STATS(1, 4, 1);
}

TEST_F(Cache, HandlesWorkAfterTheirPrimitivesWereEvicted) {
    const deconv_params A = problem(0), T = problem(1, DECONV_TRAINING);
    HandlePtr a = create(A), t = create(T);
    ASSERT_TRUE(a && t);
    // Packed weights too: they belong to the handle, not to the cache.
    deconv_sizes sz = sizes(A);
    std::vector<float> w = data(sz.weights, 0.2), bias = data(sz.bias, 0.3), src = data(sz.src, 0.1);
    ASSERT_EQ(deconv_set_weights(a.get(), w.data(), bias.data()), DECONV_OK) << deconv_last_error();
    std::vector<float> packed(static_cast<size_t>(sz.dst));
    ASSERT_EQ(deconv_forward(a.get(), src.data(), nullptr, nullptr, packed.data(), DECONV_REQ_WRITE), DECONV_OK);
    const std::vector<float> fwd = run_forward(a.get(), A), bwd = run_backward(t.get(), T),
                             tfwd = run_forward(t.get(), T);

    ASSERT_EQ(deconv_cache_set_capacity(0), DECONV_OK);  // evicts everything
    EXPECT_EQ(stats().entries, 0u);
    ASSERT_EQ(deconv_cache_set_capacity(1), DECONV_OK);
    std::vector<HandlePtr> others;
    for (int i = 2; i < 5; i++) others.push_back(create(problem(i)));  // churn the cache

    EXPECT_TRUE(bit_equal(fwd, run_forward(a.get(), A)));
    EXPECT_TRUE(bit_equal(bwd, run_backward(t.get(), T)));
    EXPECT_TRUE(bit_equal(tfwd, run_forward(t.get(), T)));
    std::vector<float> packed2(packed.size());
    ASSERT_EQ(deconv_forward(a.get(), src.data(), nullptr, nullptr, packed2.data(), DECONV_REQ_WRITE), DECONV_OK);
    EXPECT_TRUE(bit_equal(packed, packed2));
    // The evicted problems are rebuilt on demand.
    HandlePtr a2 = create(A);
    ASSERT_TRUE(a2);
    EXPECT_TRUE(bit_equal(fwd, run_forward(a2.get(), A)));
}

TEST_F(Cache, HandlesOnTheSameProblemSharePrimitives) {
    const deconv_params I = problem(0), T = problem(0, DECONV_TRAINING);
    HandlePtr a = create(I), b = create(I);
    EXPECT_STATS(1, 1, 1);
    HandlePtr t1 = create(T), t2 = create(T);
    EXPECT_STATS(4, 4, 4);
    ASSERT_TRUE(a && b && t1 && t2);
    ASSERT_NE(deconv_impl_name(a.get(), DECONV_PASS_FORWARD), nullptr);
    EXPECT_STREQ(deconv_impl_name(a.get(), DECONV_PASS_FORWARD), deconv_impl_name(b.get(), DECONV_PASS_FORWARD));
    for (deconv_pass pass : {DECONV_PASS_FORWARD, DECONV_PASS_BACKWARD_DATA, DECONV_PASS_BACKWARD_WEIGHTS}) {
        ASSERT_NE(deconv_impl_name(t1.get(), pass), nullptr) << "pass " << pass;
        EXPECT_STREQ(deconv_impl_name(t1.get(), pass), deconv_impl_name(t2.get(), pass)) << "pass " << pass;
    }
    // Sharing primitives must not mean sharing state: both compute the same, also interleaved.
    EXPECT_TRUE(bit_equal(run_forward(a.get(), I), run_forward(b.get(), I)));
    EXPECT_TRUE(bit_equal(run_backward(t1.get(), T), run_backward(t2.get(), T)));
}

}  // namespace
