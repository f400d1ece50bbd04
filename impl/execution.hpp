// Runs one plan on caller buffers: converts inputs whose layout differs into workspace copies,
// executes the primitive, and commits outputs with the caller's request (write or add).
#pragma once

#include "descriptors.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <vector>

namespace libdeconv {

enum class Req { null = 0, write = 1, add = 2 };

struct Input {
    int arg;
    const Conversion *conversion; // nullptr: `ready` is already in the primitive's layout
    const void *user;
    dnnl::memory ready;
};

struct Output {
    int arg;
    const Conversion *conversion;
    void *user;
    Req req; // Req::null: computed into the workspace and dropped (oneDNN computes it anyway)
};

struct ExtraBuffer { // a workspace buffer the caller fills before the run (e.g. converted bias)
    int arg;
    dnnl::memory::desc desc;
};

class Execution {
public:
    Execution(const Plan &plan, std::vector<Input> inputs, std::vector<Output> outputs,
            std::vector<ExtraBuffer> extras = {});
    void *extra(size_t i) const; // valid after construction, before run()
    void run();

private:
    const Plan &plan_;
    std::vector<Input> inputs_;
    std::vector<Output> outputs_;
    std::vector<ExtraBuffer> extras_;
    std::vector<size_t> input_slots_, output_slots_, extra_slots_;
    size_t scratch_slot_ = 0;
    class Workspace &workspace_;
};

} // namespace libdeconv
