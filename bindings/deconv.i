/* The one SWIG interface over capi/deconv.h. SWIG generates from it, at build time, a low-level
 * module that mirrors the C API one function for one function (Java: class deconv.DeconvNative
 * over JNI; C#: class Deconv.DeconvNative over P/Invoke). The idiomatic classes of each language
 * (Deconvolution, DeconvParams, DeconvException) are written by hand on top of it, in
 * bindings/java and bindings/csharp.
 *
 * What needs a language's own typemaps is kept in one file per language, included first:
 * - buffers (`void *` / `const void *` arguments): Java maps them to float[]/short[] and direct
 *   NIO buffers, C# to IntPtr (pinned by the caller);
 * - everything else is plain: ints, int64_t, enums and the two structs, for which the helpers
 *   below avoid out-pointers and fixed-size arrays that languages map differently. */
%module DeconvNative

%{
#include "deconv.h"
%}

%include "stdint.i"
%include "typemaps.i"

#define DECONV_EXPORT

#if defined(SWIGJAVA)
%include "java/deconv_java.swg"
#elif defined(SWIGCSHARP)
%include "csharp/deconv_csharp.swg"
#endif

/* deconv_create's out-pointer and deconv_output_shape's out-array become the helpers below. */
%ignore deconv_create;
%ignore deconv_output_shape;
/* The function table is for C programs that dlopen the library. */
%ignore deconv_api;
%ignore deconv_get_api;
%ignore deconv_get_api_fn;
/* Fixed-size members: indexed accessors instead (see %extend below). */
%ignore deconv_params::in_size;
%ignore deconv_params::kernel;
%ignore deconv_params::stride;
%ignore deconv_params::pad;
%ignore deconv_params::dilate;
%ignore deconv_params::adj;
%ignore deconv_params::target_shape;
/* Set by deconv_params_init; a binding never needs to change it. */
%immutable deconv_params::struct_size;

%apply int *OUTPUT { int *status };
%apply int64_t *OUTPUT { int64_t *value };

%include "deconv.h"

%define DECONV_ARRAY_ACCESSORS(name)
  /* name[index]; index in 0..DECONV_MAX_RANK-1 (others read 0 and are not written). */
  int64_t get_##name(int32_t index) const {
    return index >= 0 && index < DECONV_MAX_RANK ? $self->name[index] : 0;
  }
  void set_##name(int32_t index, int64_t value) {
    if (index >= 0 && index < DECONV_MAX_RANK) $self->name[index] = value;
  }
%enddef

%extend deconv_params {
  /* A new deconv_params holds deconv_params_init's defaults. */
  deconv_params() {
    deconv_params *p = (deconv_params *)calloc(1, sizeof(deconv_params));
    if (p) deconv_params_init(p);
    return p;
  }
  ~deconv_params() { free($self); }
  DECONV_ARRAY_ACCESSORS(in_size)
  DECONV_ARRAY_ACCESSORS(kernel)
  DECONV_ARRAY_ACCESSORS(stride)
  DECONV_ARRAY_ACCESSORS(pad)
  DECONV_ARRAY_ACCESSORS(dilate)
  DECONV_ARRAY_ACCESSORS(adj)
  DECONV_ARRAY_ACCESSORS(target_shape)
}

%inline %{
/* deconv_create returning the handle (NULL on failure) and the status through *status. */
deconv *deconv_create_handle(const deconv_params *params, int *status) {
    deconv *handle = NULL;
    *status = (int)deconv_create(params, &handle);
    return handle;
}

/* Entry `index` of deconv_output_shape's out_size, through *value. */
deconv_status deconv_output_size_at(const deconv_params *params, int32_t index, int64_t *value) {
    int64_t out[DECONV_MAX_RANK] = {0, 0, 0};
    deconv_status s = deconv_output_shape(params, out);
    if (s == DECONV_OK) *value = index >= 0 && index < DECONV_MAX_RANK ? out[index] : 0;
    return s;
}
%}
