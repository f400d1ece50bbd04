// A written output of 4 MiB or more (commit_kernels.hpp: worth_streaming), staged a row at a time
// in a buffer of the thread's and streamed to its place in order. The depthwise kernels on
// channels-last data store a row a vector of channels (and, forward, a phase) at a time, a cache
// line here and there, and such stores read every line from memory before writing it (a
// depthwise forward of 128 channels, k2 s2, 26 MB out, on AVX2: 2.8 ms, where writing the output
// in order takes 1.1). Rows of up to 256 KB, which stay in L2 from the kernel's stores to the
// copy's loads; larger ones are written in place.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdeconv {

class RowStaging {
public:
    RowStaging() = default;
    RowStaging(int64_t rows, int64_t row_elements);

    size_t scratch_bytes(int threads) const { return static_cast<size_t>(threads) * row_bytes_; }
    // Whether a run writing (not adding) rows of `element_bytes` elements stages them.
    bool stages(bool add, size_t element_bytes) const;
    // The calling OpenMP thread's row in `scratch` (scratch_bytes of the run's threads).
    void *row(void *scratch) const;

private:
    int64_t rows_ = 0, row_elements_ = 0;
    size_t row_bytes_ = 0; // per thread; 0: never staged
};

} // namespace libdeconv
