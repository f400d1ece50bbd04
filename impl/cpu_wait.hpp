// How long the threads that run the library's kernels waited for a CPU: the signal that a timed
// run measured the machine (another process holding a core) rather than the code.
#pragma once

#include <vector>

namespace libdeconv {

// The calling thread and the threads of its OpenMP team (the ones oneDNN and the commits run
// on), read through /proc/self/task/TID/schedstat: its second field is the time a thread spent
// runnable but waiting for a CPU. With OpenMP a call whose thread waits stalls at the next
// barrier for as long (milliseconds), so a run during which the threads waited is disturbed.
class CpuWait {
public:
    CpuWait();
    ~CpuWait();
    CpuWait(const CpuWait &) = delete;
    CpuWait &operator=(const CpuWait &) = delete;

    // Nanoseconds waited so far, summed over the threads; 0 where /proc is not readable.
    long long nanoseconds() const;
    // Whether a run of `seconds` during which `waited_ns` passed was disturbed: more than 10% of
    // it plus 50 us (a sleeping OpenMP thread's wake-up waits microseconds; a core held by another
    // process, milliseconds).
    static bool disturbed(double seconds, long long waited_ns) { return waited_ns > 0.1 * seconds * 1e9 + 5e4; }

private:
    std::vector<int> files_;
};

} // namespace libdeconv
