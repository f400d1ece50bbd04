#include "execution.hpp"

#include "engine.hpp"
#include "workspace.hpp"

#include <cstring>
#include <unordered_map>

namespace libdeconv {
namespace {

constexpr size_t kNone = ~size_t(0);

bool writes_in_place(const Output &o) { return o.req == Req::write && o.conversion->identical; }

} // namespace

Execution::Execution(const Plan &plan, std::vector<Input> inputs, std::vector<Output> outputs,
        std::vector<ExtraBuffer> extras)
    : plan_(plan), inputs_(std::move(inputs)), outputs_(std::move(outputs)), extras_(std::move(extras)),
      workspace_(Workspace::begin()) {
    scratch_slot_ = workspace_.reserve(plan.scratchpad_bytes);
    for (const Input &in : inputs_)
        input_slots_.push_back(in.conversion && !in.conversion->identical
                        ? workspace_.reserve(in.conversion->internal.get_size())
                        : kNone);
    for (const Output &out : outputs_)
        output_slots_.push_back(writes_in_place(out) ? kNone : workspace_.reserve(out.conversion->internal.get_size()));
    for (const ExtraBuffer &e : extras_) extra_slots_.push_back(workspace_.reserve(e.desc.get_size()));
    workspace_.commit();
}

void *Execution::extra(size_t i) const { return workspace_.get(extra_slots_[i]); }

void Execution::run() {
    const dnnl::engine &eng = cpu_engine();
    dnnl::stream &stream = thread_stream();
    dnnl::memory scratch(dnnl::memory::desc({static_cast<dnnl::memory::dim>(plan_.scratchpad_bytes)},
                                 dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
            eng, workspace_.get(scratch_slot_));
    std::unordered_map<int, dnnl::memory> args;
    args.emplace(DNNL_ARG_SCRATCHPAD, scratch);

    for (size_t i = 0; i < inputs_.size(); ++i) {
        const Input &in = inputs_[i];
        if (!in.conversion) {
            args.emplace(in.arg, in.ready);
            continue;
        }
        dnnl::memory user(in.conversion->user, eng, const_cast<void *>(in.user));
        if (input_slots_[i] == kNone) {
            args.emplace(in.arg, user);
            continue;
        }
        dnnl::memory internal(in.conversion->internal, eng, workspace_.get(input_slots_[i]));
        in.conversion->to_internal.execute(stream,
                {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, internal}, {DNNL_ARG_SCRATCHPAD, scratch}});
        args.emplace(in.arg, internal);
    }
    std::vector<dnnl::memory> results;
    for (size_t i = 0; i < outputs_.size(); ++i) {
        const Output &out = outputs_[i];
        if (output_slots_[i] == kNone)
            results.emplace_back(out.conversion->user, eng, out.user);
        else
            results.emplace_back(out.conversion->internal, eng, workspace_.get(output_slots_[i]));
        args.emplace(out.arg, results.back());
    }
    for (size_t i = 0; i < extras_.size(); ++i)
        args.emplace(extras_[i].arg, dnnl::memory(extras_[i].desc, eng, workspace_.get(extra_slots_[i])));

    if (plan_.zero_scratchpad) { // after the input reorders, which share the scratchpad
        stream.wait();
        std::memset(workspace_.get(scratch_slot_), 0, plan_.scratchpad_bytes);
    }
    plan_.primitive.execute(stream, args);

    for (size_t i = 0; i < outputs_.size(); ++i) {
        const Output &out = outputs_[i];
        if (output_slots_[i] == kNone || out.req == Req::null) continue;
        dnnl::memory user(out.conversion->user, eng, out.user);
        const dnnl::reorder &commit = out.req == Req::add ? out.conversion->add_to_user : out.conversion->to_user;
        commit.execute(stream, {{DNNL_ARG_FROM, results[i]}, {DNNL_ARG_TO, user}, {DNNL_ARG_SCRATCHPAD, scratch}});
    }
    stream.wait();
}

} // namespace libdeconv
