// CpuWait is what the route choice uses to retake a timed run that measured another process
// rather than a candidate: it must count time a thread spent waiting for a CPU, and not the time
// it ran (the other field of the same file).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cpu_wait.hpp"

using libdeconv::CpuWait;

namespace {

void spin_for(std::chrono::milliseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    volatile unsigned sink = 0;
    while (std::chrono::steady_clock::now() < end) sink = sink + 1;
}

} // namespace

TEST(CpuWait, ThreadRunningAloneBarelyWaits) {
    const CpuWait waits;
    const long long before = waits.nanoseconds();
    spin_for(std::chrono::milliseconds(200));
    const long long waited = waits.nanoseconds() - before;
    // Reading the time on a CPU instead would give about 200 ms here; a busy machine (other
    // processes) makes this thread wait part of the time, rarely three quarters of it.
    EXPECT_LT(waited, 150'000'000) << "ns waited while spinning alone";
}

TEST(CpuWait, CountsTheWaitOfAThreadAmongMoreThreadsThanCores) {
    const CpuWait waits;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<bool> stop{false};
    std::vector<std::thread> others;
    for (unsigned i = 0; i < 3 * cores; ++i)
        others.emplace_back([&stop] {
            volatile unsigned sink = 0;
            while (!stop.load(std::memory_order_relaxed)) sink = sink + 1;
        });
    const long long before = waits.nanoseconds();
    spin_for(std::chrono::milliseconds(400));
    const long long waited = waits.nanoseconds() - before;
    stop = true;
    for (auto &t : others) t.join();
    // Each of 3 * cores + 1 runnable threads runs under a third of the time: this one waits for most of
    // the 400 ms (the time on a CPU, the file's other field, would be about 115 ms of it).
    EXPECT_GT(waited, 200'000'000) << "ns waited among " << 3 * cores << " spinning threads";
}

TEST(CpuWait, DisturbedAboveATenthOfTheRunPlus50Microseconds) {
    EXPECT_FALSE(CpuWait::disturbed(1e-3, 149'000));
    EXPECT_TRUE(CpuWait::disturbed(1e-3, 151'000));
    EXPECT_FALSE(CpuWait::disturbed(1e-5, 40'000)); // wake-ups of a microsecond call
    EXPECT_TRUE(CpuWait::disturbed(1e-5, 60'000));
}
