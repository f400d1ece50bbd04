// The bias gradient is reduced by the library itself, on all threads, above a size where it
// splits the work (about 32K diff_dst elements): check such sizes in both layouts and data
// types, alone and beside the weight gradient, written and added, against the reference sum.
// The channel counts are no multiple of a vector (37: two vectors and a partial one; 70: a block
// of 64 channels summed four vectors at a time, then a partial vector), and runs of pixels end
// mid-vector and are of odd length (41 x 43 pixels an image).
#include <gtest/gtest.h>

#include <random>

#include "harness.hpp"

using namespace harness;

namespace {

struct BiasCase {
    deconv_dtype dtype;
    deconv_layout layout;
    deconv_req req;
    bool with_weights;
    int channels;
};

std::string name(const ::testing::TestParamInfo<BiasCase>& info) {
    const BiasCase& c = info.param;
    return std::string(dtype_str(c.dtype)) + "_" + layout_str(c.layout) + "_" + req_str(c.req) +
           (c.with_weights ? "_with_weights" : "_alone") + "_" + std::to_string(c.channels);
}

std::vector<BiasCase> cases() {
    std::vector<BiasCase> v;
    for (deconv_dtype dt : {DECONV_F32, DECONV_BF16})
        for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST})
            for (deconv_req r : {DECONV_REQ_WRITE, DECONV_REQ_ADD})
                for (bool w : {false, true})
                    for (int channels : {37, 70}) v.push_back({dt, l, r, w, channels});
    return v;
}

class LargeBiasGradient : public ::testing::TestWithParam<BiasCase> {};

TEST_P(LargeBiasGradient, MatchesTheReferenceSum) {
    const BiasCase& c = GetParam();
    Problem p;
    p.rank = 2, p.batch = 3, p.in_channels = 5, p.out_channels = c.channels, p.bias = true;
    p.in_size = {20, 21, 1}, p.kernel = {3, 3, 1}, p.stride = {2, 2, 1};  // out 41 x 43: odd

    std::mt19937_64 rng(7);
    const Vec src = random_values(rng, size_t(naive::src_elems(p)), c.dtype);
    const Vec dd = random_values(rng, size_t(naive::dst_elems(p)), c.dtype);
    const Vec prior = random_values(rng, size_t(p.out_channels), c.dtype);
    Handle h(p, c.dtype, c.layout, DECONV_TRAINING);
    ASSERT_TRUE(h.ok()) << h.error();
    Buffer bsrc = src_buffer(p, c.dtype, c.layout, src), bdd = dst_buffer(p, c.dtype, c.layout, dd);
    Buffer dw(c.dtype, size_t(naive::weights_elems(p))), db(c.dtype, prior);
    ASSERT_EQ(deconv_backward(h.get(), bsrc.data(), nullptr, bdd.data(), nullptr, DECONV_REQ_NULL,
                              c.with_weights ? dw.data() : nullptr,
                              c.with_weights ? DECONV_REQ_WRITE : DECONV_REQ_NULL, db.data(), c.req),
              DECONV_OK)
        << deconv_last_error();
    EXPECT_TRUE(compare("diff_bias", db.get(), expect_backward_bias(p, dd), c.dtype,
                        c.req == DECONV_REQ_ADD ? &prior : nullptr));
    if (c.with_weights) {
        EXPECT_TRUE(compare("diff_weights", dw.get(), expect_backward_weights(p, src, dd), c.dtype));
    }
    EXPECT_TRUE(db.guards_intact() && dw.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(Cases, LargeBiasGradient, ::testing::ValuesIn(cases()), name);

}  // namespace
