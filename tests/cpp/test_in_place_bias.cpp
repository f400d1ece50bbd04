// A kernel that writes the caller's buffer itself (its layout equal to the caller's: with one
// channel, nhwc is nchw) leaves the bias to the commit, in place. That commit must stay within the
// caller's buffer: here the output ends where an inaccessible page begins, so a read past its
// end crashes the test. Found by the fuzzer (bf16, one channel, a 1x4 input): the commit took the
// layouts as different and transposed, with bf16 gathers that read 2 bytes past each element.
// The name matches the pinned sweeps' "*Bias*" filter, so every route runs it.
#include <deconv.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "harness.hpp"
#include "naive_deconv.hpp"

namespace {

// `bytes` of writable memory that end where a PROT_NONE page begins.
class BufferAtPageEnd {
public:
    explicit BufferAtPageEnd(size_t bytes) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        size_ = (bytes + page - 1) / page * page + page;
        void *m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return;
        base_ = static_cast<char *>(m);
        if (mprotect(base_ + size_ - page, page, PROT_NONE) != 0) return;
        data_ = base_ + size_ - page - bytes;
    }
    ~BufferAtPageEnd() {
        if (base_) munmap(base_, size_);
    }
    BufferAtPageEnd(const BufferAtPageEnd &) = delete;
    BufferAtPageEnd &operator=(const BufferAtPageEnd &) = delete;
    void *data() const { return data_; }

private:
    char *base_ = nullptr;
    char *data_ = nullptr;
    size_t size_ = 0;
};

// Small integers: every output is one product plus the bias, exact in bf16 and f32.
std::vector<double> integers(int64_t n, int first) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = double(first + i % 5);
    return v;
}

double element(const void *from, deconv_dtype dt, size_t i) {
    return dt == DECONV_BF16 ? naive::bf16_to_float(static_cast<const uint16_t *>(from)[i])
                             : static_cast<const float *>(from)[i];
}

TEST(InPlaceBias, CommitStaysWithinTheCallersBuffer) {
    naive::Problem np;
    np.rank = 2;
    np.in_channels = np.out_channels = 1;
    np.in_size = {1, 4, 1};
    np.kernel = {3, 4, 1};
    np.stride = {4, 4, 1};
    np.pad = {0, 3, 0};
    np.adj = {0, 3, 0};
    const std::vector<double> src = integers(naive::src_elems(np), 1), w = integers(naive::weights_elems(np), -2),
                              bias{3.0};
    const std::vector<double> expected = naive::forward(np, src, w, bias);
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16}) {
        for (deconv_layout layout : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST})
            for (deconv_mode mode : {DECONV_INFERENCE, DECONV_TRAINING}) {
                SCOPED_TRACE(std::string(harness::dtype_str(dt)) + " " + harness::layout_str(layout) +
                             (mode == DECONV_INFERENCE ? " inference" : " training"));
                harness::Buffer s(dt, src), wt(dt, w), b(dt, bias);
                BufferAtPageEnd dst(expected.size() * (dt == DECONV_BF16 ? 2 : 4));
                ASSERT_NE(dst.data(), nullptr);
                harness::Handle h(np, dt, layout, mode);
                ASSERT_TRUE(h.ok()) << h.error();
                if (mode == DECONV_INFERENCE) {
                    ASSERT_EQ(deconv_set_weights(h.get(), wt.data(), b.data()), DECONV_OK) << deconv_last_error();
                }
                const void *weights = mode == DECONV_INFERENCE ? nullptr : wt.data();
                const void *bias_arg = mode == DECONV_INFERENCE ? nullptr : b.data();
                ASSERT_EQ(deconv_forward(h.get(), s.data(), weights, bias_arg, dst.data(), DECONV_REQ_WRITE), DECONV_OK)
                        << deconv_last_error();
                // One channel: the layouts coincide, the reference's order is the buffer's.
                for (size_t i = 0; i < expected.size(); ++i)
                    ASSERT_EQ(element(dst.data(), dt, i), expected[i]) << "output " << i << "; " << h.impls();
            }
    }
}

} // namespace
