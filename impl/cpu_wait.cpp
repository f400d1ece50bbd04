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
    std::vector<long> threads{syscall(SYS_gettid)};
#pragma omp parallel
    {
        const long tid = syscall(SYS_gettid);
#pragma omp critical(libdeconv_cpu_wait)
        threads.push_back(tid);
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (long tid : threads) {
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
