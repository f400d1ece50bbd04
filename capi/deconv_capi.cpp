// The extern "C" shim: translates C types to impl/ types, catches everything, and turns it into a
// deconv_status plus the thread-local message. Nothing here computes.
#include "deconv.h"

#include "bf16.hpp"
#include "deconvolution.hpp"
#include "error.hpp"
#include "primitive_cache.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <new>
#include <string>

struct deconv {
    explicit deconv(const libdeconv::Spec &spec) : impl(spec) {}
    libdeconv::Deconvolution impl;
};

namespace {

using libdeconv::Error;
using libdeconv::fail_invalid;
using libdeconv::Status;

thread_local std::string last_error;

deconv_status fail(deconv_status status, const std::string &message) {
    try {
        last_error = message;
    } catch (...) {
    }
    return status;
}

// Runs `body`, mapping every exception to a status and message.
template <typename Body>
deconv_status guarded(const char *function, Body body) {
    try {
        body();
        return DECONV_OK;
    } catch (const Error &e) {
        return fail(static_cast<deconv_status>(e.status()), std::string(function) + ": " + e.what());
    } catch (const dnnl::error &e) {
        if (e.status == dnnl_out_of_memory) return fail(DECONV_OUT_OF_MEMORY, std::string(function) + ": oneDNN is out of memory");
        if (e.status == dnnl_unimplemented)
            return fail(DECONV_UNSUPPORTED, std::string(function) + ": oneDNN has no implementation for this problem (" + e.what() + ")");
        return fail(DECONV_INTERNAL_ERROR, std::string(function) + ": oneDNN failed: " + e.what() + " (status "
                + std::to_string(static_cast<int>(e.status)) + ")");
    } catch (const std::bad_alloc &) {
        return fail(DECONV_OUT_OF_MEMORY, std::string(function) + ": out of memory");
    } catch (const std::exception &e) {
        return fail(DECONV_INTERNAL_ERROR, std::string(function) + ": internal error: " + e.what());
    } catch (...) {
        return fail(DECONV_INTERNAL_ERROR, std::string(function) + ": internal error");
    }
}

void require(const void *pointer, const char *name) {
    if (!pointer) fail_invalid(std::string(name) + " is NULL");
}

// A C caller may store any int in an enum; reading it through the enum type would be undefined
// in C++, so the object representation is copied out as an int.
template <typename CEnum>
int raw(const CEnum &value) {
    static_assert(sizeof(CEnum) == sizeof(int), "C enums are int-sized");
    int out;
    std::memcpy(&out, &value, sizeof out);
    return out;
}

template <typename Enum, typename CEnum>
Enum checked_enum(const CEnum &c_value, int last, const char *field, const char *allowed) {
    const int value = raw(c_value);
    if (value < 0 || value > last)
        fail_invalid(std::string(field) + " = " + std::to_string(value) + "; must be " + allowed);
    return static_cast<Enum>(value);
}

libdeconv::Req to_req(const deconv_req &req, const char *field) {
    return checked_enum<libdeconv::Req>(req, 2, field, "DECONV_REQ_NULL, DECONV_REQ_WRITE or DECONV_REQ_ADD");
}

libdeconv::Spec to_spec(const deconv_params *p) {
    require(p, "params");
    if (p->struct_size != sizeof(deconv_params))
        fail_invalid("struct_size = " + std::to_string(p->struct_size) + "; expected sizeof(deconv_params) = "
                + std::to_string(sizeof(deconv_params)) + " (start from deconv_params_init)");
    libdeconv::Spec s;
    s.rank = p->rank;
    s.batch = p->batch;
    s.in_channels = p->in_channels;
    s.out_channels = p->out_channels;
    s.groups = p->groups;
    for (int i = 0; i < DECONV_MAX_RANK; ++i) {
        s.in_size[i] = p->in_size[i];
        s.kernel[i] = p->kernel[i];
        s.stride[i] = p->stride[i];
        s.pad[i] = p->pad[i];
        s.dilate[i] = p->dilate[i];
        s.adj[i] = p->adj[i];
        s.target_shape[i] = p->target_shape[i];
    }
    s.bias = p->no_bias == 0;
    s.dtype = checked_enum<libdeconv::DataType>(p->dtype, 1, "dtype", "DECONV_F32 or DECONV_BF16");
    s.layout = checked_enum<libdeconv::Layout>(p->layout, 1, "layout", "DECONV_CHANNELS_FIRST or DECONV_CHANNELS_LAST");
    s.mode = checked_enum<libdeconv::Mode>(p->mode, 1, "mode", "DECONV_INFERENCE or DECONV_TRAINING");
    return s;
}

libdeconv::Deconvolution &impl_of(deconv *h) {
    require(h, "handle");
    return h->impl;
}

} // namespace

extern "C" {

DECONV_EXPORT deconv_status deconv_params_init(deconv_params *params) {
    return guarded("deconv_params_init", [&] {
        require(params, "params");
        *params = deconv_params{};
        params->struct_size = sizeof(deconv_params);
        params->rank = 2;
        params->batch = params->in_channels = params->out_channels = params->groups = 1;
        for (int i = 0; i < DECONV_MAX_RANK; ++i)
            params->in_size[i] = params->kernel[i] = params->stride[i] = params->dilate[i] = 1;
        params->no_bias = 0;
        params->dtype = DECONV_F32;
        params->layout = DECONV_CHANNELS_FIRST;
        params->mode = DECONV_INFERENCE;
    });
}

DECONV_EXPORT deconv_status deconv_output_shape(const deconv_params *params, int64_t out_size[DECONV_MAX_RANK]) {
    return guarded("deconv_output_shape", [&] {
        const libdeconv::Problem problem(to_spec(params));
        require(out_size, "out_size");
        for (int i = 0; i < problem.rank(); ++i) out_size[i] = problem.out_size()[i];
    });
}

DECONV_EXPORT deconv_status deconv_buffer_sizes(const deconv_params *params, deconv_sizes *sizes) {
    return guarded("deconv_buffer_sizes", [&] {
        const libdeconv::Problem problem(to_spec(params));
        require(sizes, "sizes");
        *sizes = {problem.src_elems(), problem.weights_elems(), problem.bias_elems(), problem.dst_elems()};
    });
}

DECONV_EXPORT deconv_status deconv_create(const deconv_params *params, deconv **handle) {
    return guarded("deconv_create", [&] {
        require(handle, "handle");
        const libdeconv::Spec spec = to_spec(params);
        *handle = new deconv(spec);
    });
}

DECONV_EXPORT void deconv_destroy(deconv *handle) { delete handle; }

DECONV_EXPORT deconv_status deconv_set_weights(deconv *handle, const void *weights, const void *bias) {
    return guarded("deconv_set_weights", [&] { impl_of(handle).set_weights(weights, bias); });
}

DECONV_EXPORT deconv_status deconv_forward(deconv *handle, const void *src, const void *weights, const void *bias,
        void *dst, deconv_req req) {
    return guarded("deconv_forward", [&] {
        auto &impl = impl_of(handle);
        impl.forward(src, weights, bias, dst, to_req(req, "req"));
    });
}

DECONV_EXPORT deconv_status deconv_backward(deconv *handle, const void *src, const void *weights,
        const void *diff_dst, void *diff_src, deconv_req req_src, void *diff_weights, deconv_req req_weights,
        void *diff_bias, deconv_req req_bias) {
    return guarded("deconv_backward", [&] {
        auto &impl = impl_of(handle);
        impl.backward(src, weights, diff_dst, diff_src, to_req(req_src, "req_src"), diff_weights,
                to_req(req_weights, "req_weights"), diff_bias, to_req(req_bias, "req_bias"));
    });
}

DECONV_EXPORT const char *deconv_impl_name(const deconv *handle, deconv_pass pass) {
    const char *name = nullptr;
    guarded("deconv_impl_name", [&] {
        require(handle, "handle");
        const auto p = checked_enum<libdeconv::Pass>(pass, 2, "pass",
                "DECONV_PASS_FORWARD, DECONV_PASS_BACKWARD_DATA or DECONV_PASS_BACKWARD_WEIGHTS");
        name = handle->impl.impl_name(p);
        if (!name)
            fail_invalid("pass = " + std::to_string(raw(pass))
                    + " is a backward pass, which a handle with mode = DECONV_INFERENCE does not have");
    });
    return name;
}

DECONV_EXPORT const char *deconv_last_error(void) { return last_error.c_str(); }

DECONV_EXPORT const char *deconv_status_string(deconv_status status) {
    switch (raw(status)) {
    case DECONV_OK: return "DECONV_OK";
    case DECONV_INVALID_ARGUMENT: return "DECONV_INVALID_ARGUMENT";
    case DECONV_UNSUPPORTED: return "DECONV_UNSUPPORTED";
    case DECONV_OUT_OF_MEMORY: return "DECONV_OUT_OF_MEMORY";
    case DECONV_INTERNAL_ERROR: return "DECONV_INTERNAL_ERROR";
    }
    return "unknown status";
}

DECONV_EXPORT uint32_t deconv_version(void) { return DECONV_VERSION; }

DECONV_EXPORT int deconv_bf16_supported(void) { return 1; }

DECONV_EXPORT deconv_status deconv_f32_to_bf16(const float *src, uint16_t *dst, size_t count) {
    return guarded("deconv_f32_to_bf16", [&] {
        if (count == 0) return;
        require(src, "src");
        require(dst, "dst");
        libdeconv::f32_to_bf16(src, dst, count);
    });
}

DECONV_EXPORT deconv_status deconv_bf16_to_f32(const uint16_t *src, float *dst, size_t count) {
    return guarded("deconv_bf16_to_f32", [&] {
        if (count == 0) return;
        require(src, "src");
        require(dst, "dst");
        libdeconv::bf16_to_f32(src, dst, count);
    });
}

DECONV_EXPORT deconv_status deconv_cache_set_capacity(size_t capacity) {
    return guarded("deconv_cache_set_capacity", [&] { libdeconv::PrimitiveCache::instance().set_capacity(capacity); });
}

DECONV_EXPORT deconv_status deconv_cache_stats(uint64_t *hits, uint64_t *misses, uint64_t *entries) {
    return guarded("deconv_cache_stats", [&] {
        if (!hits && !misses && !entries) fail_invalid("hits, misses and entries are all NULL");
        const auto stats = libdeconv::PrimitiveCache::instance().stats();
        if (hits) *hits = stats.hits;
        if (misses) *misses = stats.misses;
        if (entries) *entries = stats.entries;
    });
}

DECONV_EXPORT size_t deconv_cache_capacity(void) {
    size_t capacity = 0;
    guarded("deconv_cache_capacity", [&] { capacity = libdeconv::PrimitiveCache::instance().stats().capacity; });
    return capacity;
}

DECONV_EXPORT deconv_status deconv_cache_clear(void) {
    return guarded("deconv_cache_clear", [] { libdeconv::PrimitiveCache::instance().clear(); });
}

static const deconv_api api_v1 = {
        DECONV_API_VERSION, DECONV_VERSION, deconv_params_init, deconv_output_shape, deconv_buffer_sizes,
        deconv_create, deconv_destroy, deconv_set_weights, deconv_forward, deconv_backward, deconv_impl_name,
        deconv_last_error, deconv_status_string, deconv_version, deconv_bf16_supported, deconv_f32_to_bf16,
        deconv_bf16_to_f32, deconv_cache_set_capacity, deconv_cache_stats, deconv_cache_clear,
        deconv_cache_capacity,
};

DECONV_EXPORT const deconv_api *deconv_get_api(uint32_t api_version) {
    if (api_version == DECONV_API_VERSION) return &api_v1;
    fail(DECONV_INVALID_ARGUMENT, "deconv_get_api: api_version = " + std::to_string(api_version)
                    + " is not provided; this library offers DECONV_API_VERSION = "
                    + std::to_string(DECONV_API_VERSION));
    return nullptr;
}

} // extern "C"
