#include "reorder.hpp"

#include "commit_kernels.hpp"
#include "engine.hpp"
#include "plan_building.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using dt = dnnl::memory::data_type;
using commit_kernels::kParallelElements;

dnnl::reorder one_step(const dnnl::memory::desc &from, const dnnl::memory::desc &to, bool accumulate,
        size_t &scratchpad_bytes) {
    const dnnl::primitive_attr attr = accumulate ? summing_into_output() : user_scratchpad();
    const auto &eng = cpu_engine();
    dnnl::reorder::primitive_desc pd(eng, from, eng, to, attr);
    scratchpad_bytes = std::max(scratchpad_bytes, pd.scratchpad_desc().get_size());
    return dnnl::reorder(pd);
}

int64_t elements_of(const dnnl::memory::desc &d) {
    int64_t n = 1;
    for (int i = 0; i < d.data.ndims; ++i) n *= d.data.dims[i];
    return n;
}

// Its elements fill its bytes without gaps or padding: element-wise copies of it in another
// type keep every element at the same index.
bool dense(const dnnl::memory::desc &d) {
    return d.data.format_kind == dnnl_blocked && d.data.offset0 == 0
            && d.get_size() == static_cast<size_t>(elements_of(d)) * dnnl::memory::data_type_size(d.data_type());
}

template <typename In, typename Out>
void convert_run(const In *src, Out *dst, int64_t count, bool add) {
    if (add)
        commit_kernels::commit_run<true>(src, dst, count, nullptr, 0);
    else
        commit_kernels::commit_run<false>(src, dst, count, nullptr, 0);
}

// dst (=|+=) src over `n` elements, one of them bf16 and the other f32: the commits' element
// runs (vectorized for AVX2 and AVX-512).
void convert(const void *src, dt from, void *dst, int64_t n, bool add) {
    in_parallel(n >= kParallelElements, [&] {
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n; i += kParallelElements) {
            const int64_t count = std::min(n - i, kParallelElements);
            if (from == dt::bf16)
                convert_run(static_cast<const uint16_t *>(src) + i, static_cast<float *>(dst) + i, count, add);
            else
                convert_run(static_cast<const float *>(src) + i, static_cast<uint16_t *>(dst) + i, count, add);
        }
    });
}

} // namespace

Reorder make_reorder(const dnnl::memory::desc &from, const dnnl::memory::desc &to, bool accumulate,
        size_t &scratchpad_bytes) {
    Reorder r;
    const bool converts = (from.data_type() == dt::bf16 && to.data_type() == dt::f32)
            || (from.data_type() == dt::f32 && to.data_type() == dt::bf16);
    const bool type_first = from.data_type() == dt::bf16;
    const dnnl::memory::desc &bf16_side = type_first ? from : to;
    if (!converts || onednn_has_bf16_kernels() || !dense(bf16_side)) {
        r.primitive = one_step(from, to, accumulate, scratchpad_bytes);
        return r;
    }
    r.typed = true;
    r.type_first = type_first;
    r.elements = elements_of(bf16_side);
    const dnnl::memory::desc staged = with_type(bf16_side, dt::f32);
    if (staged == (type_first ? to : with_type(from, dt::f32))) { // the same layout: the type alone
        r.adds = accumulate;
        return r;
    }
    r.staged = staged;
    r.adds = accumulate && !type_first;
    size_t own = 0; // the f32 step's own scratchpad, then the copy
    r.primitive = type_first ? one_step(staged, to, accumulate, own) : one_step(from, staged, false, own);
    constexpr size_t kAlign = 64;
    r.staged_offset = (own + kAlign - 1) / kAlign * kAlign;
    scratchpad_bytes = std::max(scratchpad_bytes, r.staged_offset + staged.get_size());
    return r;
}

void run_reorder(const Reorder &r, dnnl::stream &stream, const dnnl::memory &from, const dnnl::memory &to,
        const dnnl::memory &scratchpad, const dnnl::memory &staged) {
    auto run = [&](const dnnl::memory &in, const dnnl::memory &out) {
        const dnnl_exec_arg_t args[] = {
                {DNNL_ARG_FROM, in.get()}, {DNNL_ARG_TO, out.get()}, {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
        dnnl::error::wrap_c_api(dnnl_primitive_execute(r.primitive.get(), stream.get(), 3, args),
                "could not execute a reorder");
    };
    if (!r.typed) return run(from, to);
    const dt in_type = r.type_first ? dt::bf16 : dt::f32;
    if (!r.primitive) return convert(from.get_data_handle(), in_type, to.get_data_handle(), r.elements, r.adds);
    if (r.type_first) {
        convert(from.get_data_handle(), in_type, staged.get_data_handle(), r.elements, false);
        return run(staged, to);
    }
    run(from, staged);
    stream.wait();
    convert(staged.get_data_handle(), in_type, to.get_data_handle(), r.elements, r.adds);
}

} // namespace libdeconv
