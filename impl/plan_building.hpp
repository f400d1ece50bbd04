// Building blocks shared by the ways a pass is formulated (descriptors.cpp: oneDNN's
// deconvolution primitives; gemm_formulation.cpp: a matmul): implementation choice, roles and
// their conversions.
#pragma once

#include "descriptors.hpp"
#include "error.hpp"
#include "onednn_defects.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace libdeconv {

bool is_reference(const std::string &impl);

// Whether a convolution kernel adds into its output (Plan::accumulating) faster than a pass of
// the commit over it would, for an output and input of that many elements.
bool adds_faster_in_kernel(const std::string &impl, dnnl::memory::data_type type, int64_t output_elems,
        int64_t input_elems);

// `d` with the data type `type`, its layout unchanged.
dnnl::memory::desc with_type(const dnnl::memory::desc &d, dnnl::memory::data_type type);

// Every primitive runs on a scratchpad in the calling thread's workspace.
dnnl::primitive_attr user_scratchpad();
// The same, adding into the primitive's output (a sum post-op): Plan::accumulating.
dnnl::primitive_attr summing_into_output();

// A primitive descriptor and the primitive built from it.
template <typename PD, typename Prim>
struct Chosen {
    PD pd;
    Prim primitive;
};

// The first implementation oneDNN offers that is not a reference kernel and whose code can be
// generated (a JIT kernel may refuse extreme strides or dilations only when it is built); with
// format any the list is already ordered by expected speed. A reference kernel is taken only
// when nothing else builds. Reaching a kernel known to be defective for the problem makes the
// problem unsupported in this data type (route.cpp then computes bf16 in f32). With `may_step`
// false only the first implementation is considered: oneDNN 2.6's iterator crashes now and then
// stepping over descriptors with plain data layouts (f32, 5136 output channels, channels-first).
template <typename PD, typename Prim, typename MakePD>
Chosen<PD, Prim> choose_implementation(Pass pass, const Spec &spec, MakePD make_pd, bool may_step = true) {
    PD pd = make_pd();
    int first_reference = -1;
    std::string last_failure;
    for (int index = 0;; ++index) {
        const std::string impl = pd.impl_info_str();
        // Not skipped: stepping the iterator past such a kernel can itself crash.
        if (known_defective(impl, pass, spec))
            throw Error(Status::unsupported, "oneDNN 2.6's " + impl + " fails for this problem");
        if (!is_reference(impl) || first_reference < 0) {
            try {
                Prim primitive(pd);
                if (!is_reference(impl)) return {pd, primitive};
                first_reference = index;
            } catch (const dnnl::error &e) {
                if (e.status == dnnl_out_of_memory) throw;
                last_failure = impl + ": " + e.what();
                // oneDNN 2.6 may crash stepping an iterator whose primitive failed to build:
                // step a fresh one to the same place instead.
                pd = make_pd();
                for (int i = 0; i < index; ++i) pd.next_impl();
            }
        }
        if (!may_step || !pd.next_impl()) break;
    }
    if (first_reference < 0)
        throw Error(Status::unsupported, "oneDNN could not build a kernel for this problem (" + last_failure + ")");
    pd = make_pd(); // next_impl() consumed the iterator
    for (int i = 0; i < first_reference; ++i) pd.next_impl();
    return {pd, Prim(pd)};
}

// Adds a role and the reorders its conversion needs (their scratchpad goes into
// plan.scratchpad_bytes). `repeat` > 0: an input whose internal copy holds every user element
// `repeat` times in a row, in f32 (a bias over kernel taps); no reorder does that.
void add_role(Plan &plan, int index, int arg, bool output, const dnnl::memory::desc &user,
        const dnnl::memory::desc &internal, int64_t repeat = 0);

} // namespace libdeconv
