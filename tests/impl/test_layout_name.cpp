// The layout part of deconv_impl_name: oneDNN's format tags spelled out from a descriptor's
// strides and blocks.
#include "layout_name.hpp"

#include <gtest/gtest.h>

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

std::string name_of(const dnnl::memory::dims &dims, tag t, dt type = dt::f32) {
    return libdeconv::layout_name(dnnl::memory::desc(dims, type, t));
}

TEST(LayoutName, PlainLayoutsInTheOrderOfTheirStrides) {
    EXPECT_EQ(name_of({2, 3, 4}, tag::ncw), "ncw");
    EXPECT_EQ(name_of({2, 3, 4}, tag::nwc), "nwc");
    EXPECT_EQ(name_of({2, 3, 4, 5}, tag::nchw), "nchw");
    EXPECT_EQ(name_of({2, 3, 4, 5}, tag::nhwc), "nhwc");
    EXPECT_EQ(name_of({2, 3, 4, 5, 6}, tag::ncdhw), "ncdhw");
    EXPECT_EQ(name_of({2, 3, 4, 5, 6}, tag::ndhwc), "ndhwc");
}

TEST(LayoutName, BlockedDimsInCapitalsThenTheirBlocks) {
    EXPECT_EQ(name_of({2, 32, 4, 5}, tag::nChw16c), "nChw16c");
    EXPECT_EQ(name_of({2, 32, 4, 5}, tag::nChw8c, dt::bf16), "nChw8c");
    EXPECT_EQ(name_of({2, 32, 4}, tag::nCw16c), "nCw16c");
    EXPECT_EQ(name_of({2, 32, 4, 5, 6}, tag::nCdhw16c), "nCdhw16c");
    EXPECT_EQ(name_of({32, 32, 4, 5}, tag::NChw16n16c), "NChw16n16c");
}

TEST(LayoutName, OtherThanDataTensorsIsUnknown) {
    EXPECT_EQ(name_of({2, 3}, tag::ab), "?");
    EXPECT_EQ(libdeconv::layout_name(dnnl::memory::desc()), "?");
}

} // namespace
