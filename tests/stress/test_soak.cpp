// Memory over time (issue 5, item 6): 10,000 cycles of create / set_weights / forward / destroy
// over 240 distinct small problems with the primitive cache bounded to 16 entries, so that plans
// are built, evicted and rebuilt all the time. Checked:
// - resident memory (VmRSS, /proc/self/status) grows by less than kMaxRssGrowthMiB from the end
//   of the warm-up (cycle 1,000) to the end, and the bytes malloc has handed out and not got
//   back (glibc mallinfo2) by less than kMaxHeapGrowthMiB, sampled every 250 cycles;
// - the cache never holds more than 16 entries;
// - every forward matches the naive reference the first time a problem is seen, and is
//   bit-identical to that first result every later time (rebuilt plans compute the same).
// CTest runs it twice: with oneDNN's own primitive cache (default), and with it disabled
// (ONEDNN_PRIMITIVE_CACHE_CAPACITY=0), where every miss of ours builds and frees JIT code.
// DECONV_SOAK_CYCLES overrides the cycle count (e.g. for a short run under valgrind); the
// memory bounds are checked only for a full run without sanitizers.
#include <deconv.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DECONV_SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DECONV_SOAK_SANITIZED 1
#endif
#endif

namespace {

constexpr int kCycles = 10000;
constexpr int kWarmup = 1000;
constexpr size_t kCapacity = 16;
constexpr int kProblems = 240;
// Bounds, from measurement (Debian 12, oneDNN 2.6, 2 cores, 10 runs of each configuration):
// growth after the warm-up was 0.0-0.3 MiB of VmRSS and under 0.1 MiB of malloc'ed bytes, with
// VmRSS about 34 MiB (22 MiB with oneDNN's cache off). For scale, a handle that is not freed
// costs 12 KiB per cycle (55 KiB with oneDNN's cache off): > 100 MiB over the 9,000 measured
// cycles. The bounds leave 10x room for allocator noise and still catch any leak above about
// 100 bytes per cycle (heap) or 450 bytes per cycle (RSS).
constexpr double kMaxRssGrowthMiB = 4.0;
constexpr double kMaxHeapGrowthMiB = 1.0;

double rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0; // kB
    return -1;
}

// Bytes handed out by malloc and not freed (glibc), a finer view than RSS.
double heap_mib() { return double(mallinfo2().uordblks + mallinfo2().hblkhd) / (1024.0 * 1024.0); }

// 240 distinct problems: a mixed-radix walk over rank, channels, sizes, stride, kernel, layout
// and bias (distinct by construction, checked below); every fifth one bf16 where supported.
naive::Problem problem(int i) {
    naive::Problem p;
    int r = i;
    p.rank = 1 + r % 3;
    r /= 3;
    const int64_t ic[] = {2, 3, 8, 16};
    p.in_channels = ic[r % 4];
    r /= 4;
    const int64_t oc[] = {4, 5, 16};
    p.out_channels = oc[r % 3];
    r /= 3;
    const int64_t stride = 1 + r % 2;
    r /= 2;
    r /= 2; // the layout digit: layout_of(i)
    p.bias = r % 2 == 0;
    p.batch = 1 + i % 2;
    for (int d = 0; d < p.rank; d++) {
        p.in_size[size_t(d)] = 2 + d + (i / 5) % 2; // sizes vary too; distinctness comes from the digits
        p.kernel[size_t(d)] = 2 + (i + d) % 2;
        p.stride[size_t(d)] = stride;
        p.pad[size_t(d)] = p.kernel[size_t(d)] > 2 ? 1 : 0;
    }
    p.groups = (p.in_channels % 2 == 0 && p.out_channels % 2 == 0 && i % 7 == 0) ? 2 : 1;
    return p;
}

// The layout digit of problem(i) (3 * 4 * 3 * 2 = 72 combinations below it).
deconv_layout layout_of(int i) { return ((i / 72) % 2) ? DECONV_CHANNELS_LAST : DECONV_CHANNELS_FIRST; }
deconv_dtype dtype_of(int i) { return i % 5 == 4 ? DECONV_BF16 : DECONV_F32; }

struct Data {
    naive::Problem p;
    deconv_params params;
    harness::Vec src, weights, bias;   // channels-first values
    std::vector<unsigned char> first;  // dst bytes of the first run
};

int cycles_from_environment() {
    const char *s = std::getenv("DECONV_SOAK_CYCLES");
    return s && *s ? std::atoi(s) : kCycles;
}

TEST(Soak, TenThousandCyclesOfCreateSetWeightsForwardDestroy) {
    const int cycles = cycles_from_environment();
    ASSERT_GT(cycles, 0);
    const size_t saved_capacity = deconv_cache_capacity();
    ASSERT_EQ(deconv_cache_set_capacity(kCapacity), DECONV_OK);
    ASSERT_EQ(deconv_cache_clear(), DECONV_OK);

    std::vector<Data> data(kProblems);
    std::set<std::vector<int64_t>> distinct;
    std::mt19937_64 rng(7);
    for (int i = 0; i < kProblems; i++) {
        Data &d = data[size_t(i)];
        d.p = problem(i);
        d.params = harness::make_params(d.p, dtype_of(i), layout_of(i), DECONV_INFERENCE);
        const deconv_params &q = d.params;
        std::vector<int64_t> key{q.rank, q.batch, q.in_channels, q.out_channels, q.groups, q.no_bias, q.dtype, q.layout};
        for (int k = 0; k < 3; k++)
            for (int64_t v : {q.in_size[k], q.kernel[k], q.stride[k], q.pad[k], q.dilate[k], q.adj[k]}) key.push_back(v);
        distinct.insert(key);
        d.src = harness::random_values(rng, size_t(naive::src_elems(d.p)), q.dtype);
        d.weights = harness::random_values(rng, size_t(naive::weights_elems(d.p)), q.dtype);
        d.bias = d.p.bias ? harness::random_values(rng, size_t(d.p.out_channels), q.dtype) : harness::Vec{};
    }
    ASSERT_EQ(distinct.size(), size_t(kProblems)) << "problems are not distinct";

    std::vector<int> seen(kProblems, 0);
    double rss_warm = 0, rss_max_after = 0, rss_start = rss_mib();
    double heap_warm = 0, heap_max_after = 0;
    uint64_t max_entries = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < cycles; c++) {
        // Even cycles: a hot set of 8 problems (cache hits); odd cycles sweep all problems in
        // order (misses under LRU: each plan is evicted long before its problem comes back).
        const int i = c % 2 == 0 ? (c / 2) % 8 : (c / 2) % kProblems;
        Data &d = data[size_t(i)];
        const deconv_dtype dt = d.params.dtype;
        const deconv_layout l = d.params.layout;
        harness::Buffer src = harness::src_buffer(d.p, dt, l, d.src), w(dt, d.weights), b(dt, d.bias);
        harness::Buffer dst(dt, size_t(naive::dst_elems(d.p)));

        deconv *h = nullptr;
        ASSERT_EQ(deconv_create(&d.params, &h), DECONV_OK) << "cycle " << c << ": " << deconv_last_error();
        ASSERT_EQ(deconv_set_weights(h, w.data(), d.p.bias ? b.data() : nullptr), DECONV_OK)
            << "cycle " << c << ": " << deconv_last_error();
        ASSERT_EQ(deconv_forward(h, src.data(), nullptr, nullptr, dst.data(), DECONV_REQ_WRITE), DECONV_OK)
            << "cycle " << c << ": " << deconv_last_error();
        const std::string impl = deconv_impl_name(h, DECONV_PASS_FORWARD);
        deconv_destroy(h);
        ASSERT_TRUE(dst.guards_intact()) << "cycle " << c << ": forward wrote outside dst";

        const unsigned char *bytes = static_cast<const unsigned char *>(dst.data());
        std::vector<unsigned char> out(bytes, bytes + dst.size() * (dt == DECONV_BF16 ? 2 : 4));
        if (seen[size_t(i)]++ == 0) {
            ASSERT_TRUE(harness::compare("dst", harness::read_dst(d.p, l, dst),
                                         harness::expect_forward(d.p, d.src, d.weights, d.bias), dt))
                << naive::to_string(d.p) << " " << harness::dtype_str(dt) << " " << harness::layout_str(l)
                << " impl " << impl;
            d.first = out;
        } else {
            ASSERT_TRUE(out == d.first) << "cycle " << c << ": problem " << i
                                        << " gave different bits than its first run (" << naive::to_string(d.p) << ")";
        }

        uint64_t entries = 0;
        ASSERT_EQ(deconv_cache_stats(nullptr, nullptr, &entries), DECONV_OK);
        ASSERT_LE(entries, kCapacity) << "cycle " << c;
        max_entries = std::max(max_entries, entries);

        if (c + 1 == kWarmup) {
            rss_warm = rss_mib();
            heap_warm = heap_mib();
        } else if (c + 1 > kWarmup && (c + 1) % 250 == 0) {
            rss_max_after = std::max(rss_max_after, rss_mib());
            heap_max_after = std::max(heap_max_after, heap_mib());
        }
        if ((c + 1) % 2500 == 0)
            std::printf("cycle %5d: VmRSS %.2f MiB, malloc in use %.3f MiB\n", c + 1, rss_mib(), heap_mib());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t hits = 0, misses = 0;
    ASSERT_EQ(deconv_cache_stats(&hits, &misses, nullptr), DECONV_OK);
    const double rss_end = rss_mib();
    std::printf("%d cycles in %.1f s; cache hits %llu, misses %llu, max entries %llu\n"
                "VmRSS: start %.1f MiB, after warm-up (%d cycles) %.1f MiB, max after %.1f MiB, end %.1f MiB; "
                "growth %.2f MiB (bound %.1f); malloc in use after warm-up %.3f MiB, max after %.3f MiB "
                "(growth bound %.1f)\n",
                cycles, seconds, static_cast<unsigned long long>(hits), static_cast<unsigned long long>(misses),
                static_cast<unsigned long long>(max_entries), rss_start, kWarmup, rss_warm, rss_max_after, rss_end,
                std::max(rss_max_after, rss_end) - rss_warm, kMaxRssGrowthMiB, heap_warm, heap_max_after,
                kMaxHeapGrowthMiB);
    EXPECT_EQ(deconv_cache_set_capacity(saved_capacity), DECONV_OK);

    if (cycles >= kCycles) {
        for (int i = 0; i < kProblems; i++) EXPECT_GT(seen[size_t(i)], 0) << "problem " << i << " never ran";
        EXPECT_GT(hits, 0u);
        EXPECT_GT(misses, uint64_t(cycles / 4)); // evictions really happened
    }
#ifdef DECONV_SOAK_SANITIZED
    std::printf("sanitizer build: memory bounds not checked (the sanitizer's quarantine and shadow memory grow)\n");
#else
    if (cycles >= kCycles) {
        ASSERT_GT(rss_warm, 0) << "VmRSS not readable from /proc/self/status";
        EXPECT_LT(std::max(rss_max_after, rss_end) - rss_warm, kMaxRssGrowthMiB)
            << "resident memory grew after the warm-up: " << rss_warm << " MiB -> max " << rss_max_after
            << " MiB, end " << rss_end << " MiB";
        EXPECT_LT(heap_max_after - heap_warm, kMaxHeapGrowthMiB)
            << "malloc'ed bytes grew after the warm-up: " << heap_warm << " MiB -> max " << heap_max_after << " MiB";
    }
#endif
}

// Servers start and stop threads: 1,000 short-lived threads each run forward and backward on
// one shared training handle (each thread's workspace and oneDNN stream are created on its
// first call and must go when it exits). Bounds as above, after 100 threads of warm-up;
// measured growth: 0.1-0.4 MiB of VmRSS, under 0.01 MiB of malloc'ed bytes, while a
// workspace left behind per thread (> 30 KiB) would add > 25 MiB. DECONV_SOAK_CYCLES / 10 threads
// when set (as for the valgrind run).
TEST(Soak, AThousandShortLivedThreads) {
    const int threads = cycles_from_environment() / 10, warmup = threads / 10;
    ASSERT_GT(warmup, 0);
    naive::Problem p;
    p.batch = 2;
    p.in_channels = p.out_channels = 16;
    p.in_size = {6, 6, 1};
    p.kernel = {3, 3, 1};
    p.stride = {2, 2, 1};
    p.pad = {1, 1, 0};
    const deconv_params prm = harness::make_params(p, DECONV_F32, DECONV_CHANNELS_FIRST, DECONV_TRAINING);
    harness::Handle h(prm);
    ASSERT_TRUE(h.ok()) << h.error();
    std::mt19937_64 rng(11);
    const harness::Vec src = harness::random_values(rng, size_t(naive::src_elems(p)), DECONV_F32),
                       w = harness::random_values(rng, size_t(naive::weights_elems(p)), DECONV_F32),
                       b = harness::random_values(rng, size_t(p.out_channels), DECONV_F32);
    harness::Buffer bs(DECONV_F32, src), bw(DECONV_F32, w), bb(DECONV_F32, b);
    harness::Buffer dst(DECONV_F32, size_t(naive::dst_elems(p))), ds(DECONV_F32, src.size()),
        dw(DECONV_F32, w.size()), db(DECONV_F32, b.size());

    double rss_warm = 0, rss_max_after = 0, heap_warm = 0, heap_max_after = 0;
    for (int t = 0; t < threads; t++) {
        std::string error;
        std::thread([&] {
            if (deconv_forward(h.get(), bs.data(), bw.data(), bb.data(), dst.data(), DECONV_REQ_WRITE) != DECONV_OK ||
                deconv_backward(h.get(), bs.data(), bw.data(), dst.data(), ds.data(), DECONV_REQ_WRITE, dw.data(),
                                DECONV_REQ_WRITE, db.data(), DECONV_REQ_WRITE) != DECONV_OK)
                error = deconv_last_error();
        }).join();
        ASSERT_EQ(error, "") << "thread " << t;
        if (t + 1 == warmup) {
            rss_warm = rss_mib();
            heap_warm = heap_mib();
        } else if (t + 1 > warmup && (t + 1) % 50 == 0) {
            rss_max_after = std::max(rss_max_after, rss_mib());
            heap_max_after = std::max(heap_max_after, heap_mib());
        }
    }
    std::printf("%d threads; after %d: VmRSS %.2f MiB, malloc in use %.3f MiB; max after: %.2f MiB, %.3f MiB\n",
                threads, warmup, rss_warm, heap_warm, rss_max_after, heap_max_after);
#ifndef DECONV_SOAK_SANITIZED
    if (threads >= kCycles / 10) {
        EXPECT_LT(rss_max_after - rss_warm, kMaxRssGrowthMiB) << "resident memory grows with threads started";
        EXPECT_LT(heap_max_after - heap_warm, kMaxHeapGrowthMiB) << "malloc'ed bytes grow with threads started";
    }
#endif
}

} // namespace
