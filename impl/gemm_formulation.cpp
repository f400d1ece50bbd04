#include "gemm_formulation.hpp"

#include "engine.hpp"
#include "plan_building.hpp"

#include <algorithm>
#include <vector>

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// A tensor as logical dims and the strides of one physical arrangement of them.
struct Strided {
    memory::dims dims, strides;
};

// Drops the dims of size 1 (their strides are arbitrary), so that two arrangements that place
// every element alike compare equal.
memory::desc describe(const Strided &t, dt type) {
    memory::dims dims, strides;
    for (size_t i = 0; i < t.dims.size(); ++i)
        if (t.dims[i] != 1) dims.push_back(t.dims[i]), strides.push_back(t.strides[i]);
    if (dims.empty()) dims.push_back(1), strides.push_back(1);
    return memory::desc(dims, type, strides);
}

// Row-major strides of `dims` taken in the order `order` (outermost first).
memory::dims strides_in_order(const memory::dims &dims, const std::vector<size_t> &order) {
    memory::dims strides(dims.size());
    memory::dim step = 1;
    for (size_t k = order.size(); k-- > 0;) {
        strides[order[k]] = step;
        step *= dims[order[k]];
    }
    return strides;
}

struct Geometry {
    int rank;
    memory::dim batch, in_channels, out_channels, pixels = 1, taps = 1;
    memory::dims in, kernel; // per spatial dim
    bool channels_last;
};

Geometry geometry_of(const Problem &p) {
    const Spec &s = p.spec();
    Geometry g{s.rank, s.batch, s.in_channels, s.out_channels, 1, 1, {}, {}, s.layout == Layout::channels_last};
    for (int i = 0; i < s.rank; ++i) {
        g.in.push_back(s.in_size[i]);
        g.kernel.push_back(s.kernel[i]);
        g.pixels *= s.in_size[i];
        g.taps *= s.kernel[i];
    }
    return g;
}

// A data tensor (batch, channels, in...) in the caller's layout, and as the rows of a
// (pixels x channels) matrix.
Strided data_as_user(const Geometry &g, memory::dim channels) {
    Strided t;
    t.dims = {g.batch, channels};
    for (memory::dim i : g.in) t.dims.push_back(i);
    std::vector<size_t> order{0};
    if (!g.channels_last) order.push_back(1);
    for (int d = 0; d < g.rank; ++d) order.push_back(2 + d);
    if (g.channels_last) order.push_back(1);
    t.strides = strides_in_order(t.dims, order);
    return t;
}

Strided data_as_matrix(const Geometry &g, memory::dim channels) {
    Strided t = data_as_user(g, channels);
    std::vector<size_t> order{0};
    for (int d = 0; d < g.rank; ++d) order.push_back(2 + d);
    order.push_back(1);
    t.strides = strides_in_order(t.dims, order);
    return t;
}

// The output tensor with each spatial dim split into (input pixel, tap): dims (batch,
// out_channels, in_1, kernel_1, ..., in_r, kernel_r); output index = in_d * kernel_d + tap_d.
Strided output_as_user(const Geometry &g) {
    Strided t;
    t.dims = {g.batch, g.out_channels};
    for (int d = 0; d < g.rank; ++d) t.dims.push_back(g.in[d]), t.dims.push_back(g.kernel[d]);
    std::vector<size_t> order{0};
    if (!g.channels_last) order.push_back(1);
    for (int d = 0; d < g.rank; ++d) order.push_back(2 + 2 * d), order.push_back(3 + 2 * d);
    if (g.channels_last) order.push_back(1);
    t.strides = strides_in_order(t.dims, order);
    return t;
}

// ... and as the patch matrix: rows (batch, in...), columns (out_channels, kernel...), or
// (kernel..., out_channels) with `taps_first`.
Strided output_as_patches(const Geometry &g, bool taps_first = false) {
    Strided t = output_as_user(g);
    std::vector<size_t> order{0};
    for (int d = 0; d < g.rank; ++d) order.push_back(2 + 2 * d);
    if (!taps_first) order.push_back(1);
    for (int d = 0; d < g.rank; ++d) order.push_back(3 + 2 * d);
    if (taps_first) order.push_back(1);
    t.strides = strides_in_order(t.dims, order);
    return t;
}

// The caller's weights (in_channels, out_channels, kernel...) as (in_channels, kernel...,
// out_channels): with `taps_first` the forward matrix's rows, whose columns run over the taps
// and then the output channels.
memory::desc caller_weights_taps_first(const Geometry &g, dt type) {
    return memory::desc({g.in_channels, g.taps, g.out_channels}, type, {g.out_channels * g.taps, 1, g.taps});
}

// Channels-last outputs whose patch matrix with the taps first is the caller's buffer itself
// (every input spatial size 1 but the outermost: a 1x1 input, a 1D problem): the forward then
// writes, and adds into, the caller's buffer (dcgan.l1 channels-last: the copy out cost 25% of
// the call, and an add request 15-40% more).
bool output_is_taps_first(const Geometry &g) {
    return g.channels_last && g.taps > 1 &&
           describe(output_as_user(g), dt::f32) == describe(output_as_patches(g, true), dt::f32);
}

memory::desc matrix(memory::dim rows, memory::dim cols, dt type, bool transposed = false) {
    return transposed ? memory::desc({rows, cols}, type, tag::ba) : memory::desc({rows, cols}, type, tag::ab);
}

// A role whose primitive sees the tensor as the matrix `view`, laid out as `matrix`: the
// caller's buffer itself when the caller holds it that way, else a permuted copy.
void add_matrix_role(Plan &plan, int index, int arg, bool output, const Strided &user, const Strided &matrix,
        dt user_type, const memory::desc &view) {
    if (describe(user, view.data_type()) == describe(matrix, view.data_type())) {
        add_role(plan, index, arg, output, with_type(view, user_type), view);
        return;
    }
    add_role(plan, index, arg, output, describe(user, user_type), describe(matrix, view.data_type()));
    plan.roles[index].primitive_view = view;
}

using MatmulChoice = Chosen<dnnl::matmul::primitive_desc, dnnl::matmul>;

MatmulChoice choose_matmul(const Problem &p, Pass pass, const memory::desc &a, const memory::desc &b,
        const memory::desc &bias, const memory::desc &c) {
    return choose_implementation<dnnl::matmul::primitive_desc, dnnl::matmul>(pass, p.spec(), [&] {
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), user_scratchpad(), cpu_engine());
    });
}

// The chosen matmul adding into its output, when oneDNN runs that with the same kernel.
void add_accumulating(Plan &plan, const dnnl::matmul::primitive_desc &pd) {
    const dnnl::primitive_attr attr = summing_into_output();
    try {
        dnnl::matmul::primitive_desc summing(
                dnnl::matmul::desc(pd.src_desc(), pd.weights_desc(), pd.bias_desc(), pd.dst_desc()), attr, cpu_engine());
        if (std::string(summing.impl_info_str()) != pd.impl_info_str()) return;
        plan.accumulating = dnnl::matmul(summing);
        plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, summing.scratchpad_desc().get_size());
    } catch (const dnnl::error &e) {
        if (e.status == dnnl_out_of_memory) throw;
    }
}

} // namespace

bool is_matrix_product(const Problem &p) {
    const Spec &s = p.spec();
    if (s.groups != 1) return false;
    for (int i = 0; i < s.rank; ++i) {
        if (p.pad()[i] != 0 || p.adj()[i] != 0 || s.dilate[i] != 1) return false;
        if (s.in_size[i] != 1 && s.stride[i] != s.kernel[i]) return false;
    }
    return true;
}

bool make_matrix_product(Plan &plan, const Problem &p, Pass pass, dt type) {
    const Spec &s = p.spec();
    const Geometry g = geometry_of(p);
    const memory::dim rows = g.batch * g.pixels, in = g.in_channels, out = g.out_channels * g.taps;
    const dt user = onednn_type(s.dtype);
    MatmulChoice chosen = [&] {
        switch (pass) {
        case Pass::forward: {
            const memory::desc bias = s.bias ? matrix(1, out, dt::f32) : memory::desc();
            return choose_matmul(p, pass, matrix(rows, in, type), matrix(in, out, type), bias, matrix(rows, out, type));
        }
        case Pass::backward_data: // diff_src = P(diff_dst) * weights^T
            return choose_matmul(p, pass, matrix(rows, out, type), matrix(out, in, type, true), memory::desc(),
                    matrix(rows, in, type));
        case Pass::backward_weights: // diff_weights = src^T * P(diff_dst), in f32 as the other route
        default:
            return choose_matmul(p, pass, matrix(in, rows, type, true), matrix(rows, out, type), memory::desc(),
                    matrix(in, out, dt::f32));
        }
    }();
    const auto &pd = chosen.pd;
    if (is_reference(pd.impl_info_str())) return false;
    // A forward whose output is the caller's with the taps first (output_is_taps_first) packs
    // the weights as the matmul's matrix seen as (in, taps, out_channels), where oneDNN can
    // describe its blocks so, and repeats the bias whole for every tap.
    memory::desc weights_taps_first;
    if (pass == Pass::forward && output_is_taps_first(g)) {
        try {
            weights_taps_first = pd.weights_desc().reshape({in, g.taps, g.out_channels});
        } catch (const dnnl::error &e) {
            if (e.status == dnnl_out_of_memory) throw; // else the blocks straddle the taps: columns (out, taps)
        }
    }
    const bool taps_first = !weights_taps_first.is_zero();
    plan.primitive = chosen.primitive;
    plan.impl = std::string("matmul:") + pd.impl_info_str();
    plan.scratchpad_bytes = pd.scratchpad_desc().get_size();
    // The caller's weights (in_channels, out_channels, kernel...) are the (in x out) matrix.
    const memory::desc weights = matrix(in, out, user), weights_t = matrix(out, in, user, true);
    switch (pass) {
    case Pass::forward:
        add_matrix_role(plan, role::fwd_src, DNNL_ARG_SRC, false, data_as_user(g, in), data_as_matrix(g, in), user,
                pd.src_desc());
        if (taps_first) {
            add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, caller_weights_taps_first(g, user),
                    weights_taps_first);
            plan.roles[role::fwd_weights].primitive_view = pd.weights_desc();
        } else {
            add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, weights, pd.weights_desc());
        }
        if (s.bias) {
            add_role(plan, role::fwd_bias, DNNL_ARG_BIAS, false, memory::desc({s.out_channels}, user, tag::a),
                    pd.bias_desc(), g.taps);
            plan.roles[role::fwd_bias].conversion.repeat_whole = taps_first;
        }
        add_matrix_role(plan, role::fwd_dst, DNNL_ARG_DST, true, output_as_user(g), output_as_patches(g, taps_first),
                user, pd.dst_desc());
        break;
    case Pass::backward_data:
        add_matrix_role(plan, role::bwd_data_diff_dst, DNNL_ARG_SRC, false, output_as_user(g), output_as_patches(g),
                user, pd.src_desc());
        add_role(plan, role::bwd_data_weights, DNNL_ARG_WEIGHTS, false, weights_t, pd.weights_desc());
        add_matrix_role(plan, role::bwd_data_diff_src, DNNL_ARG_DST, true, data_as_user(g, in), data_as_matrix(g, in),
                user, pd.dst_desc());
        break;
    case Pass::backward_weights:
        add_matrix_role(plan, role::bwd_weights_src, DNNL_ARG_SRC, false, data_as_user(g, in), data_as_matrix(g, in),
                user, pd.src_desc());
        add_matrix_role(plan, role::bwd_weights_diff_dst, DNNL_ARG_WEIGHTS, false, output_as_user(g),
                output_as_patches(g), user, pd.weights_desc());
        add_role(plan, role::bwd_weights_diff_weights, DNNL_ARG_DST, true, weights, pd.dst_desc());
        break;
    }
    const int output = pass == Pass::forward ? role::fwd_dst
                     : pass == Pass::backward_data ? role::bwd_data_diff_src : role::bwd_weights_diff_weights;
    if (plan.roles[output].conversion.identical) add_accumulating(plan, pd);
    return true;
}

bool is_patches_candidate(const Problem &p, Pass pass) {
    const Spec &s = p.spec();
    if (pass != Pass::forward || s.groups != 1 || is_matrix_product(p)) return false;
    double taps = 1, strides = 1;
    for (int i = 0; i < s.rank; ++i) taps *= double(s.kernel[i]), strides *= double(s.stride[i]);
    constexpr double kMaxOverlap = 4, kMaxPatchBytes = 256.0 * (1 << 20);
    const double patch_bytes = 4.0 * double(p.src_elems()) / double(s.in_channels) * double(s.out_channels) * taps;
    return taps > 1 && taps <= kMaxOverlap * strides && patch_bytes <= kMaxPatchBytes;
}

bool make_patches_product(Plan &plan, const Problem &p) {
    const Spec &s = p.spec();
    const Geometry g = geometry_of(p);
    const memory::dim rows = g.batch * g.pixels, in = g.in_channels, out = g.out_channels * g.taps;
    const dt user = onednn_type(s.dtype);
    const MatmulChoice chosen = choose_matmul(p, Pass::forward, matrix(rows, in, dt::f32), matrix(in, out, dt::f32),
            memory::desc(), matrix(rows, out, dt::f32));
    const auto &pd = chosen.pd;
    if (is_reference(pd.impl_info_str())) return false;
    plan.primitive = chosen.primitive;
    plan.impl = std::string("patches:matmul:") + pd.impl_info_str();
    plan.scratchpad_bytes = pd.scratchpad_desc().get_size();
    add_matrix_role(plan, role::fwd_src, DNNL_ARG_SRC, false, data_as_user(g, in), data_as_matrix(g, in), user,
            pd.src_desc());
    // The patches' columns run over the taps, then the channels (patch_gather.hpp): the weights
    // are the caller's seen as (in, taps, out_channels).
    add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, caller_weights_taps_first(g, user),
            pd.weights_desc().reshape({in, g.taps, g.out_channels}));
    plan.roles[role::fwd_weights].primitive_view = pd.weights_desc();
    if (s.bias) // the caller's, as f32: arg 0 makes it the gather's (execution.cpp)
        add_role(plan, role::fwd_bias, 0, false, memory::desc({s.out_channels}, user, tag::a),
                memory::desc({s.out_channels}, dt::f32, tag::a));
    Role &dst = plan.roles[role::fwd_dst];
    dst.present = dst.output = true;
    dst.arg = DNNL_ARG_DST;
    dst.conversion.user = user_data_desc(p, true);
    dst.conversion.internal = pd.dst_desc();
    dst.gather = std::make_shared<const PatchGather>(make_patch_gather(p));
    return true;
}

} // namespace libdeconv
