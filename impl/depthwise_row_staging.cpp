#include "depthwise_row_staging.hpp"

#include "commit_kernels.hpp"

#include <omp.h>

namespace libdeconv {

constexpr int64_t kMaxStagedRowBytes = int64_t(256) << 10;

RowStaging::RowStaging(int64_t rows, int64_t row_elements) : rows_(rows), row_elements_(row_elements) {
    const int64_t row_bytes = row_elements * int64_t(sizeof(float)); // f32, the larger element
    if (row_bytes <= kMaxStagedRowBytes && commit_kernels::worth_streaming(rows * row_bytes))
        row_bytes_ = static_cast<size_t>((row_bytes + 63) / 64 * 64);
}

bool RowStaging::stages(bool add, size_t element_bytes) const {
    return !add && row_bytes_ && commit_kernels::worth_streaming(rows_ * row_elements_ * int64_t(element_bytes));
}

void *RowStaging::row(void *scratch) const {
    return static_cast<char *>(scratch) + static_cast<size_t>(omp_get_thread_num()) * row_bytes_;
}

} // namespace libdeconv
