#include "depthwise_formulation.hpp"

#include "cpu_features.hpp"
#include "depthwise_backward_data.hpp"
#include "depthwise_backward_data_rows.hpp"
#include "depthwise_backward_weights.hpp"
#include "depthwise_forward.hpp"
#include "depthwise_plane_forward.hpp"
#include "depthwise_plane_weights.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "plan_building.hpp"

#include <omp.h>
#include <string>

namespace libdeconv {
namespace {

using memory = dnnl::memory;
using dt = memory::data_type;

DepthwiseShape shape_of(const Problem &p) {
    const Spec &s = p.spec();
    DepthwiseShape d;
    static_cast<SpatialDims &>(d) = spatial_dims(p);
    d.batch = s.batch;
    d.channels = s.out_channels;
    return d;
}

// The caller's weights (G, 1, 1, k...) as f32 (G, 1, 1, k...) in that order: the kernels' on
// channels-first planes, a conversion only of bf16 weights.
memory::desc plain_f32_weights_desc(const memory::desc &user) {
    const memory::dims dims = user.dims();
    memory::dims strides(dims.size());
    memory::dim step = 1;
    for (size_t i = dims.size(); i-- > 0;) {
        strides[i] = step;
        step *= dims[i];
    }
    return memory::desc(dims, dt::f32, strides);
}

// The caller's weights (G, 1, 1, k...) as the kernel's f32 (k..., G): a reorder's destination.
memory::desc kernel_weights_desc(const memory::desc &user) {
    const memory::dims dims = user.dims();
    memory::dims strides(dims.size());
    memory::dim step = dims[0];
    for (size_t i = dims.size(); i-- > 3;) {
        strides[i] = step;
        step *= dims[i];
    }
    strides[0] = 1;
    strides[1] = strides[2] = step;
    return memory::desc(dims, dt::f32, strides);
}

const void *handle(const dnnl_exec_arg_t *args, int count, int arg) {
    for (int i = 0; i < count; ++i) {
        if (args[i].arg != arg) continue;
        void *data = nullptr;
        dnnl::error::wrap_c_api(dnnl_memory_get_data_handle(args[i].memory, &data), "could not get a data handle");
        return data;
    }
    return nullptr;
}

} // namespace

// A pass of our own, run on the tensors of a plan's arguments as a primitive would be.
class DepthwiseKernel {
public:
    virtual ~DepthwiseKernel() = default;
    virtual void run(DataType compute, const dnnl_exec_arg_t *args, int count,
            const std::array<bool, kMaxRoles> &adding) const = 0;
};

namespace {

// f(T{}) with T the tensors' element type: uint16_t for bf16, float for f32.
template <typename F>
void with_element_type(DataType compute, F f) {
    if (compute == DataType::bf16)
        f(uint16_t{});
    else
        f(float{});
}

// Kernel: DepthwiseForward on channels-last copies, or DepthwisePlaneForward on the caller's
// channels-first data. On `threads` OpenMP threads: the plan's scratchpad holds their buffers.
template <typename Kernel>
class ForwardKernel final : public DepthwiseKernel {
public:
    ForwardKernel(const Kernel &kernel, int threads) : kernel_(kernel), threads_(threads) {}
    size_t scratch_bytes() const { return kernel_.scratch_bytes(threads_); }
    void run(DataType compute, const dnnl_exec_arg_t *args, int count,
            const std::array<bool, kMaxRoles> &adding) const override {
        const auto *weights = static_cast<const float *>(handle(args, count, DNNL_ARG_WEIGHTS));
        const auto *bias = static_cast<const float *>(handle(args, count, DNNL_ARG_BIAS));
        void *scratch = const_cast<void *>(handle(args, count, DNNL_ARG_SCRATCHPAD));
        with_element_type(compute, [&](auto type) {
            using T = decltype(type);
            kernel_.run(static_cast<const T *>(handle(args, count, DNNL_ARG_SRC)), weights, bias,
                    static_cast<T *>(const_cast<void *>(handle(args, count, DNNL_ARG_DST))), adding[role::fwd_dst],
                    scratch, threads_);
        });
    }

private:
    Kernel kernel_;
    int threads_;
};

// Kernel: DepthwiseBackwardDataRows on channels-last data, or DepthwiseBackwardData on
// channels-first planes.
template <typename Kernel>
class DataGradientKernel final : public DepthwiseKernel {
public:
    // On `threads` OpenMP threads: the plan's scratchpad holds their buffers.
    DataGradientKernel(const DepthwiseShape &shape, int threads) : kernel_(shape), threads_(threads) {}
    size_t scratch_bytes() const { return kernel_.scratch_bytes(threads_); }
    void run(DataType compute, const dnnl_exec_arg_t *args, int count,
            const std::array<bool, kMaxRoles> &adding) const override {
        const auto *weights = static_cast<const float *>(handle(args, count, DNNL_ARG_WEIGHTS));
        void *scratch = const_cast<void *>(handle(args, count, DNNL_ARG_SCRATCHPAD));
        with_element_type(compute, [&](auto type) {
            using T = decltype(type);
            kernel_.run(static_cast<const T *>(handle(args, count, DNNL_ARG_DIFF_DST)), weights,
                    static_cast<T *>(const_cast<void *>(handle(args, count, DNNL_ARG_DIFF_SRC))),
                    adding[role::bwd_data_diff_src], scratch, threads_);
        });
    }

private:
    Kernel kernel_;
    int threads_;
};

// Kernel: DepthwiseBackwardWeights on channels-last copies, or DepthwisePlaneWeights on the
// caller's channels-first data.
template <typename Kernel>
class WeightGradientKernel final : public DepthwiseKernel {
public:
    // On `threads` OpenMP threads: the plan's scratchpad holds their buffers and sums.
    WeightGradientKernel(const Kernel &kernel, int threads) : kernel_(kernel), threads_(threads) {}
    size_t scratch_bytes() const { return kernel_.scratch_bytes(threads_); }
    void run(DataType compute, const dnnl_exec_arg_t *args, int count,
            const std::array<bool, kMaxRoles> &adding) const override {
        auto output = [&](int arg) { return static_cast<float *>(const_cast<void *>(handle(args, count, arg))); };
        const DepthwiseBackwardWeights::Gradients out{output(DNNL_ARG_DIFF_WEIGHTS),
                adding[role::bwd_weights_diff_weights], output(DNNL_ARG_DIFF_BIAS), adding[role::bwd_weights_diff_bias]};
        void *scratch = const_cast<void *>(handle(args, count, DNNL_ARG_SCRATCHPAD));
        with_element_type(compute, [&](auto type) {
            using T = decltype(type);
            kernel_.run(static_cast<const T *>(handle(args, count, DNNL_ARG_SRC)),
                    static_cast<const T *>(handle(args, count, DNNL_ARG_DIFF_DST)), out, scratch, threads_);
        });
    }

private:
    Kernel kernel_;
    int threads_;
};

} // namespace

bool is_depthwise_candidate(const Problem &p, Pass pass) {
    const Spec &s = p.spec();
    if (s.groups == 1 || s.in_channels != s.groups || s.out_channels != s.groups) return false;
    if (pass == Pass::backward_data)
        return DepthwiseBackwardData::supports(shape_of(p)) || DepthwiseBackwardDataRows::supports(shape_of(p));
    if (pass == Pass::backward_weights) return DepthwiseBackwardWeights::supports();
    return DepthwiseForward::supports(shape_of(p));
}

void make_depthwise(Plan &plan, const Problem &p, Pass pass, DataType compute, bool channels_first) {
    const Spec &s = p.spec();
    if (!is_depthwise_candidate(p, pass))
        throw Error(Status::unsupported, "the depthwise kernels do not compute this pass of this problem");
    // The kernels read the problem's own data type and compute in f32. A bf16 problem whose
    // routes all compute in f32 (oneDNN without bf16 kernels, as on AVX2) runs them on its bf16
    // tensors as they are; where the bf16 route exists, an f32 one would only add conversions.
    if (compute != s.dtype && onednn_has_bf16_kernels())
        throw Error(Status::unsupported, "the depthwise kernels compute in the problem's own data type");
    plan.compute = s.dtype;
    const dt type = onednn_type(s.dtype);
    plan.impl = std::string("libdeconv_dw:") + (has_avx512() ? "avx512_core" : "avx2");
    auto channels_last = [&](const memory::desc &user) {
        return memory::desc(user.dims(), type, plain_data_tag(user.dims().size(), true));
    };
    auto planes = [&](const memory::desc &user) {
        return memory::desc(user.dims(), type, plain_data_tag(user.dims().size(), false));
    };
    const memory::desc src = user_data_desc(p, false), dst = user_data_desc(p, true), weights = user_weights_desc(p);
    const memory::desc bias_f32({s.out_channels}, dt::f32, memory::format_tag::a);
    if (pass == Pass::backward_data) {
        // Built under the plan's SingleThreaded scope (descriptors.cpp), as a primitive is.
        const int threads = std::max(1, omp_get_max_threads());
        if (channels_first) {
            if (!DepthwiseBackwardData::supports(shape_of(p)))
                throw Error(Status::unsupported, "the depthwise data gradient's phase planes would be too large");
            auto kernel = std::make_shared<const DataGradientKernel<DepthwiseBackwardData>>(shape_of(p), threads);
            plan.scratchpad_bytes = kernel->scratch_bytes();
            plan.depthwise = kernel;
            plan.impl += " on channels-first planes";
        } else {
            if (!DepthwiseBackwardDataRows::supports(shape_of(p)))
                throw Error(Status::unsupported, "the depthwise data gradient on channels-last data has too many taps");
            auto kernel = std::make_shared<const DataGradientKernel<DepthwiseBackwardDataRows>>(shape_of(p), threads);
            plan.scratchpad_bytes = kernel->scratch_bytes();
            plan.depthwise = kernel;
        }
        // Either kind of data in the other's copies where timing finds that faster (3D
        // channels-first planes for channels-last data: dw 3x3x3 stride 2, 32 channels, 16^3
        // outputs, 0.34 ms on the planes; oneDNN has no depthwise kernel for it, x64:gemm 1.0).
        const auto internal = [&](const memory::desc &user) { return channels_first ? planes(user) : channels_last(user); };
        add_role(plan, role::bwd_data_diff_dst, DNNL_ARG_DIFF_DST, false, dst, internal(dst));
        add_role(plan, role::bwd_data_weights, DNNL_ARG_WEIGHTS, false, weights,
                channels_first ? plain_f32_weights_desc(weights) : kernel_weights_desc(weights));
        add_role(plan, role::bwd_data_diff_src, DNNL_ARG_DIFF_SRC, true, src, internal(src));
        return;
    }
    if (pass == Pass::backward_weights) {
        // Built under the plan's SingleThreaded scope (descriptors.cpp), as a primitive is.
        const int threads = std::max(1, omp_get_max_threads());
        if (channels_first && !DepthwisePlaneWeights::supports(shape_of(p)))
            throw Error(Status::unsupported, "the depthwise weight gradient's planes would be too large");
        if (channels_first) {
            auto kernel = std::make_shared<const WeightGradientKernel<DepthwisePlaneWeights>>(
                    DepthwisePlaneWeights(shape_of(p)), threads);
            plan.scratchpad_bytes = kernel->scratch_bytes();
            plan.depthwise = kernel;
            plan.impl += " on channels-first planes";
        } else {
            auto kernel = std::make_shared<const WeightGradientKernel<DepthwiseBackwardWeights>>(
                    DepthwiseBackwardWeights(shape_of(p)), threads);
            plan.scratchpad_bytes = kernel->scratch_bytes();
            plan.depthwise = kernel;
        }
        add_role(plan, role::bwd_weights_src, DNNL_ARG_SRC, false, src, channels_first ? src : channels_last(src));
        add_role(plan, role::bwd_weights_diff_dst, DNNL_ARG_DIFF_DST, false, dst, channels_first ? dst : channels_last(dst));
        add_role(plan, role::bwd_weights_diff_weights, DNNL_ARG_DIFF_WEIGHTS, true, weights,
                channels_first ? plain_f32_weights_desc(weights) : kernel_weights_desc(weights));
        if (s.bias)
            add_role(plan, role::bwd_weights_diff_bias, DNNL_ARG_DIFF_BIAS, true,
                    memory::desc({s.out_channels}, type, memory::format_tag::a), bias_f32);
        return;
    }
    const int threads = std::max(1, omp_get_max_threads()); // under the plan's SingleThreaded scope
    if (channels_first) {
        if (!DepthwisePlaneForward::supports(shape_of(p)))
            throw Error(Status::unsupported, "the depthwise forward pass's padded planes would be too large");
        auto kernel = std::make_shared<const ForwardKernel<DepthwisePlaneForward>>(DepthwisePlaneForward(shape_of(p)),
                threads);
        plan.scratchpad_bytes = kernel->scratch_bytes();
        plan.depthwise = kernel;
        plan.impl += " on channels-first planes";
    } else {
        auto kernel = std::make_shared<const ForwardKernel<DepthwiseForward>>(DepthwiseForward(shape_of(p)), threads);
        plan.scratchpad_bytes = kernel->scratch_bytes();
        plan.depthwise = kernel;
    }
    add_role(plan, role::fwd_src, DNNL_ARG_SRC, false, src, channels_first ? src : channels_last(src));
    add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, weights,
            channels_first ? plain_f32_weights_desc(weights) : kernel_weights_desc(weights));
    if (s.bias)
        add_role(plan, role::fwd_bias, DNNL_ARG_BIAS, false, memory::desc({s.out_channels}, type, memory::format_tag::a),
                bias_f32);
    add_role(plan, role::fwd_dst, DNNL_ARG_DST, true, dst, channels_first ? dst : channels_last(dst));
}

void run_depthwise(const Plan &plan, const dnnl_exec_arg_t *args, int count,
        const std::array<bool, kMaxRoles> &adding) {
    plan.depthwise->run(plan.compute, args, count, adding);
}

} // namespace libdeconv
