#include "plan_building.hpp"

#include "engine.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

dnnl::reorder make_reorder(const dnnl::memory::desc &from, const dnnl::memory::desc &to, bool accumulate,
        size_t &scratch) {
    const dnnl::primitive_attr attr = accumulate ? summing_into_output() : user_scratchpad();
    const auto &eng = cpu_engine();
    dnnl::reorder::primitive_desc pd(eng, from, eng, to, attr);
    scratch = std::max(scratch, pd.scratchpad_desc().get_size());
    return dnnl::reorder(pd);
}

} // namespace

bool is_reference(const std::string &impl) { return impl.rfind("ref", 0) == 0; }

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::primitive_attr summing_into_output() {
    dnnl::primitive_attr attr = user_scratchpad();
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
    return attr;
}

void add_role(Plan &plan, int index, int arg, bool output, const dnnl::memory::desc &user,
        const dnnl::memory::desc &internal, int64_t repeat) {
    Role &r = plan.roles[index];
    r.present = true;
    r.output = output;
    r.arg = arg;
    Conversion &c = r.conversion;
    c.user = user;
    c.internal = internal;
    c.repeat = repeat;
    c.identical = repeat == 0 && user == internal;
    if (repeat > 0) return;
    if (!output && !c.identical) {
        r.commit = OutputCommit{describe(user), describe(internal)};
        r.by_commit = r.commit.elementwise() || (r.commit.tiled_into_blocks() && !r.commit.reorder_reads_faster())
                || r.commit.channel_runs();
        if (!r.by_commit) c.to_internal = make_reorder(user, internal, false, plan.scratchpad_bytes);
    }
    if (output) {
        // A layout equal to the caller's (oneDNN ignores the strides of dims of size 1: one
        // channel in nhwc is nchw) is described as the caller's, so that the commit of a kernel
        // that wrote the caller's buffer is element-wise in place: a transposing one read bf16
        // past the end of the buffer (found by the fuzzer).
        r.commit = OutputCommit{describe(c.identical ? user : internal), describe(user)};
        r.by_commit = !c.identical && r.commit.vectorized();
        if (r.by_commit) { // the commit adds (and adds the bias); a plain write may go to oneDNN
            if (r.commit.reorder_writes_faster()) c.to_user = make_reorder(internal, user, false, plan.scratchpad_bytes);
            return;
        }
        if (!c.identical) c.to_user = make_reorder(internal, user, false, plan.scratchpad_bytes);
        c.add_to_user = make_reorder(internal, user, true, plan.scratchpad_bytes);
    }
}

} // namespace libdeconv
