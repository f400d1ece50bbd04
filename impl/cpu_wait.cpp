#include "cpu_wait.hpp"

#include <fcntl.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace libdeconv {

CpuWait::CpuWait() {
    // Slots filled in place: nothing may allocate (and throw) inside the region.
    std::vector<long> threads(static_cast<size_t>(omp_get_max_threads()) + 1, 0);
    threads[0] = syscall(SYS_gettid);
#pragma omp parallel
    {
        const size_t slot = static_cast<size_t>(omp_get_thread_num()) + 1;
        if (slot < threads.size()) threads[slot] = syscall(SYS_gettid);
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (long tid : threads) {
        if (tid == 0) continue; // a slot no thread of the team took
        const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) files_.push_back(fd);
    }
}

CpuWait::~CpuWait() {
    for (int fd : files_) close(fd);
}

long long CpuWait::nanoseconds() const {
    long long sum = 0;
    for (int fd : files_) {
        char text[128];
        const ssize_t n = pread(fd, text, sizeof text - 1, 0);
        if (n <= 0) continue;
        text[n] = 0;
        char *end = nullptr;
        std::strtoull(text, &end, 10); // first field: time on a CPU
        sum += std::strtoll(end, nullptr, 10);
    }
    return sum;
}

} // namespace libdeconv
