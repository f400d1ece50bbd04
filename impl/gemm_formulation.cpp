#include "gemm_formulation.hpp"

#include "engine.hpp"
#include "plan_building.hpp"

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using MatmulChoice = Chosen<dnnl::matmul::primitive_desc, dnnl::matmul>;

MatmulChoice choose_matmul(const Problem &p, Pass pass, const memory::desc &a, const memory::desc &b,
        const memory::desc &bias, const memory::desc &c) {
    return choose_implementation<dnnl::matmul::primitive_desc, dnnl::matmul>(pass, p.spec(), [&] {
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), user_scratchpad(), cpu_engine());
    });
}

} // namespace

bool is_matrix_product(const Problem &p) {
    const Spec &s = p.spec();
    if (s.groups != 1 || s.layout != Layout::channels_first) return false;
    for (int i = 0; i < s.rank; ++i)
        if (s.in_size[i] != 1 || p.pad()[i] != 0 || p.adj()[i] != 0 || s.dilate[i] != 1) return false;
    return true;
}

bool make_matrix_product(Plan &plan, const Problem &p, Pass pass, dt type) {
    const Spec &s = p.spec();
    int64_t taps = 1;
    for (int i = 0; i < s.rank; ++i) taps *= s.kernel[i];
    const memory::dim rows = s.batch, in = s.in_channels, out = s.out_channels * taps;
    const dt user = onednn_type(s.dtype);
    // The caller's buffers as matrices: src (rows x in), weights (in x out), dst (rows x out).
    auto matrix = [](memory::dim r, memory::dim c, dt t, bool transposed = false) {
        return transposed ? memory::desc({r, c}, t, tag::ba) : memory::desc({r, c}, t, tag::ab);
    };
    MatmulChoice chosen = [&] {
        switch (pass) {
        case Pass::forward: {
            const memory::desc bias = s.bias ? matrix(1, out, dt::f32) : memory::desc();
            return choose_matmul(p, pass, matrix(rows, in, type), matrix(in, out, type), bias, matrix(rows, out, type));
        }
        case Pass::backward_data: // diff_src = diff_dst * weights^T
            return choose_matmul(p, pass, matrix(rows, out, type), matrix(out, in, type, true), memory::desc(),
                    matrix(rows, in, type));
        case Pass::backward_weights: // diff_weights = src^T * diff_dst, in f32 as the other route
        default:
            return choose_matmul(p, pass, matrix(in, rows, type, true), matrix(rows, out, type), memory::desc(),
                    matrix(in, out, dt::f32));
        }
    }();
    const auto &pd = chosen.pd;
    if (is_reference(pd.impl_info_str())) return false;
    plan.primitive = chosen.primitive;
    plan.impl = std::string("matmul:") + pd.impl_info_str();
    plan.scratchpad_bytes = pd.scratchpad_desc().get_size();
    switch (pass) {
    case Pass::forward:
        add_role(plan, role::fwd_src, DNNL_ARG_SRC, false, matrix(rows, in, user), pd.src_desc());
        add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, matrix(in, out, user), pd.weights_desc());
        if (s.bias)
            add_role(plan, role::fwd_bias, DNNL_ARG_BIAS, false, memory::desc({s.out_channels}, user, tag::a),
                    pd.bias_desc(), taps);
        add_role(plan, role::fwd_dst, DNNL_ARG_DST, true, matrix(rows, out, user), pd.dst_desc());
        break;
    case Pass::backward_data:
        add_role(plan, role::bwd_data_diff_dst, DNNL_ARG_SRC, false, matrix(rows, out, user), pd.src_desc());
        add_role(plan, role::bwd_data_weights, DNNL_ARG_WEIGHTS, false, matrix(out, in, user, true),
                pd.weights_desc());
        add_role(plan, role::bwd_data_diff_src, DNNL_ARG_DST, true, matrix(rows, in, user), pd.dst_desc());
        break;
    case Pass::backward_weights:
        add_role(plan, role::bwd_weights_src, DNNL_ARG_SRC, false, matrix(in, rows, user, true), pd.src_desc());
        add_role(plan, role::bwd_weights_diff_dst, DNNL_ARG_WEIGHTS, false, matrix(rows, out, user),
                pd.weights_desc());
        add_role(plan, role::bwd_weights_diff_weights, DNNL_ARG_DST, true, matrix(in, out, user), pd.dst_desc());
        plan.bias_gradient_apart = s.bias;
        break;
    }
    return true;
}

} // namespace libdeconv
