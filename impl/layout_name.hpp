// A data layout as oneDNN's format tags name it (nchw, nhwc, nChw16c): the dims from outermost to
// innermost, blocked ones in capitals, then the blocks; "?" for what is not a blocked 3-5D layout.
// deconv_impl_name adds it to a deconvolution kernel's name; deconv-bench names oneDNN's picks
// with it. Header-only: it depends on oneDNN alone.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace libdeconv {

inline std::string layout_name(const dnnl::memory::desc &md) {
    const dnnl_memory_desc_t &d = md.data;
    if (d.format_kind != dnnl_blocked || d.ndims < 3 || d.ndims > 5) return "?";
    const std::string names = std::string("nc") + (d.ndims == 3 ? "w" : d.ndims == 4 ? "hw" : "dhw");
    const dnnl_blocking_desc_t &b = d.format_desc.blocking;
    std::vector<int> order(d.ndims);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
    std::string name;
    for (int i : order) {
        bool blocked = false;
        for (int k = 0; k < b.inner_nblks; ++k) blocked |= b.inner_idxs[k] == i;
        name += blocked ? static_cast<char>(names[i] - 'a' + 'A') : names[i];
    }
    for (int k = 0; k < b.inner_nblks; ++k) name += std::to_string(b.inner_blks[k]) + names[b.inner_idxs[k]];
    return name;
}

} // namespace libdeconv
