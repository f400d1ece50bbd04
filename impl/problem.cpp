#include "problem.hpp"

#include "error.hpp"

#include <sstream>

namespace libdeconv {
namespace {

std::string indexed(const char *field, int i) {
    return std::string(field) + "[" + std::to_string(i) + "]";
}

void require_at_least(const std::string &field, int64_t value, int64_t minimum) {
    if (value < minimum)
        fail_invalid(field + " = " + std::to_string(value) + "; must be >= " + std::to_string(minimum));
}

// Product of `values` as element count of tensor `what`, refused on overflow or past the limit.
int64_t checked_elems(const char *what, std::initializer_list<int64_t> values, size_t elem_bytes) {
    int64_t total = 1;
    std::ostringstream dims;
    bool first = true;
    for (int64_t v : values) {
        dims << (first ? "" : " x ") << v;
        first = false;
    }
    for (int64_t v : values) {
        if (__builtin_mul_overflow(total, v, &total) || total > kMaxTensorBytes / int64_t(elem_bytes))
            fail_invalid(std::string(what) + " would hold " + dims.str() + " elements, more than the "
                    + std::to_string(kMaxTensorBytes) + "-byte limit of one tensor");
    }
    return total;
}

} // namespace

const char *dtype_name(DataType dtype) {
    return dtype == DataType::f32 ? "DECONV_F32" : "DECONV_BF16";
}

Problem::Problem(const Spec &spec) : spec_(spec) {
    const int r = spec.rank;
    if (r < 1 || r > 3) fail_invalid("rank = " + std::to_string(r) + "; must be 1, 2 or 3");
    require_at_least("batch", spec.batch, 1);
    require_at_least("in_channels", spec.in_channels, 1);
    require_at_least("out_channels", spec.out_channels, 1);
    require_at_least("groups", spec.groups, 1);
    if (spec.in_channels % spec.groups != 0)
        fail_invalid("groups = " + std::to_string(spec.groups) + " does not divide in_channels = "
                + std::to_string(spec.in_channels));
    if (spec.out_channels % spec.groups != 0)
        fail_invalid("groups = " + std::to_string(spec.groups) + " does not divide out_channels = "
                + std::to_string(spec.out_channels));

    bool any_target = false;
    for (int i = 0; i < r; ++i) {
        require_at_least(indexed("in_size", i), spec.in_size[i], 1);
        require_at_least(indexed("kernel", i), spec.kernel[i], 1);
        require_at_least(indexed("stride", i), spec.stride[i], 1);
        require_at_least(indexed("dilate", i), spec.dilate[i], 1);
        require_at_least(indexed("target_shape", i), spec.target_shape[i], 0);
        any_target = any_target || spec.target_shape[i] != 0;
    }
    // oneDNN keeps many sizes in int, and handles long spatial dimensions badly: limits that keep
    // it safe (and every product here far from overflowing int64).
    for (const auto &[name, v] : {std::pair<const char *, int64_t>{"batch", spec.batch},
                 {"in_channels", spec.in_channels}, {"out_channels", spec.out_channels}, {"groups", spec.groups}})
        if (v > kMaxDim) fail_invalid(std::string(name) + " = " + std::to_string(v) + "; must be <= " + std::to_string(kMaxDim));
    for (int i = 0; i < r; ++i) {
        for (const auto &[name, v] : {std::pair<const char *, int64_t>{"in_size", spec.in_size[i]},
                     {"kernel", spec.kernel[i]}, {"stride", spec.stride[i]}, {"dilate", spec.dilate[i]},
                     {"pad", spec.pad[i]}, {"adj", spec.adj[i]}, {"target_shape", spec.target_shape[i]}})
            if (v > kMaxSpatial)
                fail_invalid(indexed(name, i) + " = " + std::to_string(v) + "; must be <= " + std::to_string(kMaxSpatial));
        const int64_t full = spec.stride[i] * (spec.in_size[i] - 1) + spec.dilate[i] * (spec.kernel[i] - 1) + 1;
        if (full > kMaxSpatial)
            fail_invalid("the full output along dimension " + std::to_string(i) + ", stride*(in_size-1)+dilate*(kernel-1)+1 = "
                    + std::to_string(full) + " with " + indexed("in_size", i) + " = " + std::to_string(spec.in_size[i]) + ", "
                    + indexed("kernel", i) + " = " + std::to_string(spec.kernel[i]) + ", " + indexed("stride", i) + " = "
                    + std::to_string(spec.stride[i]) + ", " + indexed("dilate", i) + " = " + std::to_string(spec.dilate[i])
                    + "; must be <= " + std::to_string(kMaxSpatial));
    }

    for (int i = 0; i < r; ++i) {
        const int64_t dilated_kernel = spec.dilate[i] * (spec.kernel[i] - 1) + 1;
        const int64_t full = spec.stride[i] * (spec.in_size[i] - 1) + dilated_kernel;
        if (any_target) {
            // MXNet's InferPad: pad and adj follow from the target, given pad/adj are ignored.
            const int64_t target = spec.target_shape[i];
            if (target == 0)
                fail_invalid(indexed("target_shape", i) + " = 0 while other target_shape entries are set; "
                        "give all " + std::to_string(r) + " entries or none");
            if (target > full)
                fail_invalid(indexed("target_shape", i) + " = " + std::to_string(target)
                        + " is larger than the full output stride*(in_size-1)+dilate*(kernel-1)+1 = "
                        + std::to_string(full));
            const int64_t excess = full - target;
            adj_[i] = excess % 2;
            pad_[i] = (excess + 1) / 2;
        } else {
            require_at_least(indexed("pad", i), spec.pad[i], 0);
            require_at_least(indexed("adj", i), spec.adj[i], 0);
            if (spec.adj[i] >= spec.stride[i])
                fail_invalid(indexed("adj", i) + " = " + std::to_string(spec.adj[i]) + "; must be smaller than "
                        + indexed("stride", i) + " = " + std::to_string(spec.stride[i]));
            pad_[i] = spec.pad[i];
            adj_[i] = spec.adj[i];
        }
        out_size_[i] = full - 2 * pad_[i] + adj_[i];
        kernel_stride_[i] = spec.in_size[i] == 1 ? adj_[i] + 1 : spec.stride[i];
        if (out_size_[i] < 1)
            fail_invalid("output size along dimension " + std::to_string(i) + " would be "
                    + std::to_string(out_size_[i]) + " (stride*(in_size-1)+dilate*(kernel-1)+1-2*pad+adj with "
                    + indexed("pad", i) + " = " + std::to_string(pad_[i]) + "); must be >= 1");
    }
    for (int i = r; i < 3; ++i) {
        // unused dims are neutral so signatures do not depend on garbage the caller left there
        spec_.in_size[i] = spec_.kernel[i] = spec_.stride[i] = spec_.dilate[i] = 1;
        spec_.pad[i] = spec_.adj[i] = spec_.target_shape[i] = 0;
    }
    // One channel in and out: channels-last data is channels-first data, and taken as such (its
    // routes and signature): oneDNN compares the strides of the channel dimension too, so nhwc
    // of one channel went through the channels-last routes (held-out 1 -> 1 channel, 256x256, x2:
    // forward f32 0.98 ms against 0.21 channels-first, bf16 1.20 against 0.24).
    if (spec_.in_channels == 1 && spec_.out_channels == 1) spec_.layout = Layout::channels_first;

    const size_t eb = element_bytes();
    const Dims3 &in = spec.in_size, &k = spec.kernel, &o = out_size_;
    const int64_t one = 1;
    src_elems_ = checked_elems("src", {spec.batch, spec.in_channels, in[0], r > 1 ? in[1] : one, r > 2 ? in[2] : one}, eb);
    weights_elems_ = checked_elems("weights",
            {spec.in_channels, spec.out_channels / spec.groups, k[0], r > 1 ? k[1] : one, r > 2 ? k[2] : one}, 4);
    dst_elems_ = checked_elems("dst", {spec.batch, spec.out_channels, o[0], r > 1 ? o[1] : one, r > 2 ? o[2] : one}, 4);
}

double Problem::flops() const {
    double flops = 2.0 * double(spec_.batch) * double(spec_.in_channels) * double(spec_.out_channels / spec_.groups);
    for (int i = 0; i < spec_.rank; ++i) flops *= double(spec_.kernel[i]) * double(spec_.in_size[i]);
    return flops;
}

bool Problem::has_dead_taps() const {
    const Spec &s = spec_;
    for (int d = 0; d < s.rank; ++d) {
        if (s.kernel[d] > 4096) return true; // not worth proving; callers only use it to be careful
        for (int64_t k = 0; k < s.kernel[d]; ++k) {
            const int64_t first = k * s.dilate[d] - pad_[d]; // output position of input 0
            const int64_t i = first >= 0 ? 0 : (-first + s.stride[d] - 1) / s.stride[d];
            if (i >= s.in_size[d] || first + i * s.stride[d] >= out_size_[d]) return true;
        }
    }
    return false;
}

std::vector<int64_t> Problem::signature() const {
    const Spec &s = spec_;
    std::vector<int64_t> key{s.rank, s.batch, s.in_channels, s.out_channels, s.groups, s.bias,
            static_cast<int64_t>(s.dtype), static_cast<int64_t>(s.layout), static_cast<int64_t>(s.mode)};
    for (int i = 0; i < s.rank; ++i)
        for (int64_t v : {s.in_size[i], s.kernel[i], kernel_stride_[i], s.dilate[i], pad_[i], adj_[i]}) key.push_back(v);
    return key;
}

SpatialDims spatial_dims(const Problem &p) {
    const Spec &s = p.spec();
    SpatialDims d;
    const int lead = 3 - s.rank;
    for (int i = 0; i < s.rank; ++i) {
        d.in[lead + i] = s.in_size[i];
        d.out[lead + i] = p.out_size()[i];
        d.kernel[lead + i] = s.kernel[i];
        d.stride[lead + i] = s.stride[i];
        d.pad[lead + i] = p.pad()[i];
        d.dilate[lead + i] = s.dilate[i];
    }
    return d;
}

} // namespace libdeconv
