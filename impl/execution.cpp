#include "execution.hpp"

#include "bf16.hpp"
#include "depthwise_formulation.hpp"
#include "engine.hpp"
#include "threads.hpp"
#include "workspace.hpp"

#include <algorithm>
#include <cstring>

namespace libdeconv {
namespace {

// The memory objects of one plan on one thread, pointing into that thread's workspace.
struct Binding {
    uint64_t plan_id = 0;
    const char *workspace = nullptr;
    dnnl::memory scratchpad;
    std::array<dnnl::memory, kMaxRoles> user, internal, view;
    std::array<dnnl::memory, kMaxRoles> staged; // a two-step reorder's f32 copy (reorder.hpp)
};

constexpr size_t kBindingsPerThread = 16;

// Least recently used first out, so that the plans of one call never evict each other.
struct Bindings {
    std::array<Binding, kBindingsPerThread> slots;
    std::array<uint64_t, kBindingsPerThread> last_use{};
    uint64_t clock = 0;
};

Binding &bind(const Plan &plan, char *workspace) {
    thread_local Bindings bindings;
    size_t slot = 0;
    for (size_t i = 0; i < kBindingsPerThread; ++i) {
        if (bindings.slots[i].plan_id == plan.id) {
            slot = i;
            break;
        }
        if (bindings.last_use[i] < bindings.last_use[slot]) slot = i;
    }
    bindings.last_use[slot] = ++bindings.clock;
    Binding &b = bindings.slots[slot];
    if (b.plan_id == plan.id && b.workspace == workspace) return b;
    const dnnl::engine &eng = cpu_engine();
    b.plan_id = 0; // stays invalid if a creation below throws
    b.scratchpad = dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(plan.scratchpad_bytes)},
                                        dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
            eng, workspace);
    for (int i = 0; i < kMaxRoles; ++i) {
        const Role &r = plan.roles[i];
        b.user[i] = b.internal[i] = b.view[i] = b.staged[i] = dnnl::memory();
        if (!r.present) continue;
        // A role's reorders stage alike: an input's one, an output's write and add.
        for (const Reorder *x : {&r.conversion.to_internal, &r.conversion.to_user, &r.conversion.add_to_user})
            if (x->staged) b.staged[i] = dnnl::memory(x->staged, eng, workspace + x->staged_offset);
        b.user[i] = dnnl::memory(r.conversion.user, eng, DNNL_MEMORY_NONE);
        if (r.has_internal) b.internal[i] = dnnl::memory(r.conversion.internal, eng, workspace + r.internal_offset);
        if (r.has_internal && r.primitive_view) b.view[i] = dnnl::memory(r.primitive_view, eng, workspace + r.internal_offset);
    }
    b.workspace = workspace;
    b.plan_id = plan.id;
    return b;
}

void run(const dnnl::primitive &primitive, dnnl::stream &stream, const dnnl_exec_arg_t *args, int count) {
    dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(), count, args),
            "could not execute a primitive");
}

// The primitive writes this output straight into the caller's buffer (where a bias commit then
// adds the bias in place). Not a batch chunk's output with a bias to add: in the workspace it is
// still in cache when the commit adds the bias on the way to the caller's buffer (bilinear.dw
// channels-last forward f32, 8 chunks: 1.7-1.8 ms against 3.1-4.0 adding in place afterwards).
bool in_place(const Plan &plan, const Role &r, const Tensor &t) {
    if (plan.bias_in_commit && plan.batch_chunks > 1) return false;
    const bool request_in_place = t.req == Req::write || (t.req == Req::add && (plan.accumulating || plan.depthwise));
    return r.output && !r.merge && r.conversion.identical && request_in_place;
}

void point_to(const dnnl::memory &memory, const void *data) {
    dnnl::error::wrap_c_api(dnnl_memory_set_data_handle_v2(memory.get(), const_cast<void *>(data), nullptr),
            "could not set a data handle");
}

} // namespace

void prepare(std::initializer_list<const Plan *> plans) {
    size_t bytes = 0;
    for (const Plan *p : plans) bytes = std::max(bytes, p->workspace_bytes);
    char *workspace = thread_workspace(bytes);
    for (const Plan *p : plans) bind(*p, workspace);
    thread_stream();
}

void fill_repeated(const Conversion &c, const void *user, float *internal) {
    const int64_t count = c.user.dims()[0];
    const bool bf16 = c.user.data_type() == dnnl::memory::data_type::bf16;
    for (int64_t i = 0; i < count; ++i) {
        const float v = bf16 ? bf16_to_f32(static_cast<const uint16_t *>(user)[i]) : static_cast<const float *>(user)[i];
        if (c.repeat_whole)
            for (int64_t r = 0; r < c.repeat; ++r) internal[r * count + i] = v;
        else
            std::fill_n(internal + i * c.repeat, c.repeat, v);
    }
}

namespace {

// One run of the plan's primitive. With `reuse_shared_inputs` the inputs the same in every batch
// chunk (weights, bias) are in their internal copies already, from the previous chunk.
void execute_once(const Plan &plan, const Tensors &tensors, Binding &b, char *workspace, dnnl::stream &stream,
        bool reuse_shared_inputs) {
    dnnl_exec_arg_t args[kMaxRoles + 1];
    int count = 0;
    args[count++] = {DNNL_ARG_SCRATCHPAD, b.scratchpad.get()};
    const float *commit_bias = nullptr;
    std::array<bool, kMaxRoles> adding{}; // outputs the computation adds into itself
    bool accumulate = false;
    for (int i = 0; i < kMaxRoles; ++i) {
        adding[i] = plan.roles[i].present && tensors[i].req == Req::add && in_place(plan, plan.roles[i], tensors[i]);
        accumulate |= adding[i];
    }
    for (int i = 0; i < kMaxRoles; ++i) {
        const Role &r = plan.roles[i];
        if (!r.present) continue;
        const Tensor &t = tensors[i];
        const bool converted = reuse_shared_inputs && !r.output && r.chunk_bytes == 0;
        // The input as its conversion reads it: the caller's buffer, or its phase-split copy.
        const void *source = t.user;
        if (!r.output && !t.ready && r.split) {
            if (!converted) r.split(*r.phases, t.user, workspace + r.staged_offset);
            source = workspace + r.staged_offset;
        }
        dnnl_memory_t used;
        if (!r.output && t.ready) {
            used = t.ready->get();
        } else if (in_place(plan, r, t) || (!r.output && r.conversion.identical)) {
            point_to(b.user[i], source);
            used = b.user[i].get();
        } else if (converted) {
            used = b.internal[i].get();
        } else if (!r.output && r.conversion.repeat > 0) {
            fill_repeated(r.conversion, source, static_cast<float *>(b.internal[i].get_data_handle()));
            used = b.internal[i].get();
        } else if (!r.output && r.by_commit) {
            commit_output(r.commit, source, workspace + r.internal_offset, nullptr, false);
            used = b.internal[i].get();
        } else if (!r.output) {
            point_to(b.user[i], source);
            run_reorder(r.conversion.to_internal, stream, b.user[i], b.internal[i], b.scratchpad, b.staged[i]);
            used = b.internal[i].get();
        } else {
            used = b.internal[i].get();
        }
        if (b.view[i] && used == b.internal[i].get()) used = b.view[i].get();
        if (r.arg != 0) {
            args[count++] = {accumulate && r.accumulating_arg ? r.accumulating_arg : r.arg, used};
        } else { // the f32 bias the output commit adds
            void *data = nullptr;
            dnnl::error::wrap_c_api(dnnl_memory_get_data_handle(used, &data), "could not get a data handle");
            commit_bias = static_cast<const float *>(data);
        }
    }

    if (plan.zero_scratchpad) { // after the input reorders, which share the scratchpad
        stream.wait();
        std::memset(workspace, 0, plan.scratchpad_bytes);
    }
    if (plan.depthwise) {
        stream.wait(); // the input reorders
        run_depthwise(plan, args, count, adding);
    } else {
        run(accumulate ? plan.accumulating : plan.primitive, stream, args, count);
    }

    for (int i = 0; i < kMaxRoles; ++i) {
        const Role &r = plan.roles[i];
        const Tensor &t = tensors[i];
        if (!r.present || !r.output || t.req == Req::null) continue;
        if (r.gather) {
            stream.wait();
            gather_patches(*r.gather, reinterpret_cast<const float *>(workspace + r.internal_offset),
                    const_cast<void *>(t.user), commit_bias, t.req == Req::add);
            continue;
        }
        if (r.merge) {
            const char *result = workspace + r.internal_offset;
            if (r.staged) {
                if (r.by_commit) {
                    commit_output(r.commit, result, workspace + r.staged_offset, nullptr, false);
                } else {
                    point_to(b.user[i], workspace + r.staged_offset);
                    run_reorder(r.conversion.to_user, stream, b.internal[i], b.user[i], b.scratchpad, b.staged[i]);
                }
                result = workspace + r.staged_offset;
            }
            stream.wait();
            r.merge(*r.phases, result, const_cast<void *>(t.user), commit_bias, t.req == Req::add);
            continue;
        }
        const bool written = in_place(plan, r, t);
        if (written && !commit_bias) continue; // the primitive wrote (or added into) the caller's buffer
        // A write without bias that oneDNN's reorder does faster (OutputCommit::reorder_writes_faster).
        const bool by_reorder = r.by_commit && r.conversion.to_user && t.req == Req::write && !commit_bias
                && r.commit.reorder_writes_faster();
        if ((plan.bias_in_commit || r.by_commit) && !by_reorder) { // in place when the primitive wrote the caller's buffer
            stream.wait();
            commit_output(r.commit, written ? t.user : workspace + r.internal_offset, const_cast<void *>(t.user),
                    commit_bias, t.req == Req::add && !written);
            continue;
        }
        point_to(b.user[i], t.user);
        run_reorder(t.req == Req::add ? r.conversion.add_to_user : r.conversion.to_user, stream, b.internal[i],
                b.user[i], b.scratchpad, b.staged[i]);
    }
    stream.wait();
}

} // namespace

void execute(const Plan &plan, const Tensors &tensors) {
    SingleThreaded scope(plan.single_threaded);
    char *workspace = thread_workspace(plan.workspace_bytes);
    Binding &b = bind(plan, workspace);
    dnnl::stream &stream = thread_stream();
    Tensors chunk = tensors;
    for (int64_t c = 0; c < plan.batch_chunks; ++c) {
        for (int i = 0; i < kMaxRoles; ++i)
            if (chunk[i].user && plan.roles[i].chunk_bytes)
                chunk[i].user = static_cast<const char *>(tensors[i].user) + c * plan.roles[i].chunk_bytes;
        execute_once(plan, chunk, b, workspace, stream, c > 0);
    }
}

} // namespace libdeconv
