// The tables of depthwise_columns.hpp's column kernels, and with them the kernels themselves,
// instantiated here once for both instruction sets and data types.
#include "depthwise_columns.hpp"

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>

namespace libdeconv {
namespace depthwise_columns {
namespace {

template <typename Isa, typename T, int G, bool Full, bool Add, bool Native, int... N>
void fill(ColumnKernel<T> *table, std::integer_sequence<int, N...>) {
    const ColumnKernel<T> kernels[] = {&Isa::template columns<N, G, Full, Add, Native, T>...};
    std::copy(std::begin(kernels), std::end(kernels), table);
}

template <typename Isa, typename T, bool Add, bool Native>
void fill_all(ColumnKernels<Isa, T> &k) {
    fill<Isa, T, 2, true, Add, Native>(k.pairs, std::make_integer_sequence<int, Isa::kMaxPairedTaps + 1>{});
    fill<Isa, T, 1, true, Add, Native>(k.full, std::make_integer_sequence<int, Isa::kMaxRegisterTaps + 1>{});
    fill<Isa, T, 1, false, Add, Native>(k.partial, std::make_integer_sequence<int, Isa::kMaxRegisterTaps + 1>{});
    k.any = &Isa::template columns_any<Add, T>;
}

template <typename Isa, typename T, bool Add>
void choose(ColumnKernels<Isa, T> &k) {
    bool native = false;
    if constexpr (std::is_same_v<T, uint16_t>) native = Isa::native_bf16();
    if (native)
        fill_all<Isa, T, Add, true>(k);
    else
        fill_all<Isa, T, Add, false>(k);
}

} // namespace

template <typename Isa, typename T>
ColumnKernels<Isa, T>::ColumnKernels(bool add) {
    if (add)
        choose<Isa, T, true>(*this);
    else
        choose<Isa, T, false>(*this);
}

template struct ColumnKernels<Avx512, float>;
template struct ColumnKernels<Avx512, uint16_t>;
template struct ColumnKernels<Avx2, float>;
template struct ColumnKernels<Avx2, uint16_t>;

} // namespace depthwise_columns
} // namespace libdeconv
