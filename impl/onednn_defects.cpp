#include "onednn_defects.hpp"

#include <algorithm>

namespace libdeconv {

bool known_defective(const std::string &impl, Pass pass, const Spec &spec) {
    // Backward data through brgconv:avx512_core_amx_bf16 (not its 1x1 variant) reads a NULL
    // pointer in execution once out_channels / groups exceeds 5120, whatever the other sizes;
    // the margin to 4096 is ours.
    if (pass == Pass::backward_data && impl == "brgconv:avx512_core_amx_bf16" &&
        spec.out_channels / spec.groups > 4096)
        return true;
    // The AMX bf16 weight gradient writes out of bounds once an outer (not innermost) output
    // dimension reaches about 2^22 (seen from 4194303; 4194000 is fine): an int overflow at
    // 512 bytes per position. The margin to 2^21 is ours.
    if (pass == Pass::backward_weights && impl == "jit:avx512_core_amx_bf16")
        for (int i = 0; i + 1 < spec.rank; ++i)
            if (spec.stride[i] * (spec.in_size[i] - 1) + spec.dilate[i] * (spec.kernel[i] - 1) + 1 > (int64_t(1) << 21))
                return true;
    // jit_deconvolution:avx512_core_amx_bf16 takes time in the square of the dilation (0.9 s
    // against 0.02 s in f32 at 8192, minutes at 65536), and the route would time it. It is also
    // the hint of the backward passes, which therefore compute in f32 too.
    if (impl == "jit_deconvolution:avx512_core_amx_bf16")
        for (int i = 0; i < spec.rank; ++i)
            if (spec.dilate[i] > 1024) return true;
    // brgconv kernels (which oneDNN's deconvolution wraps) take time and memory per position of
    // the innermost spatial dim when they are built: 1D backward data in f32 took 0.3 s and 590
    // MB at a width of 2^18, 1.8 s and 2.2 GB at 2^20, and in bf16 11.5 s and 8 GB at about 2^22
    // (found by the fuzzer); 2D at 1024 x 1024 takes 2 ms. Other kernels run wider problems.
    if (impl.rfind("brgconv", 0) == 0 && too_wide_for_brgconv(spec)) return true;
    return false;
}

bool bf16_dilated_output_too_large(const Problem &problem) {
    const Spec &spec = problem.spec();
    bool dilated = false;
    for (int i = 0; i < spec.rank; ++i) dilated |= spec.dilate[i] > 1;
    if (!dilated || spec.rank < 2) return false;
    const int64_t blocks_per_group = (spec.out_channels / spec.groups + 15) / 16;
    double bytes = double(spec.batch) * double(spec.groups * blocks_per_group * 16) * 2.0;
    for (int i = 0; i < spec.rank; ++i) bytes *= double(problem.out_size()[i]);
    return bytes >= double(int64_t(1) << 30);
}

bool too_wide_for_brgconv(const Spec &spec) {
    const int d = spec.rank - 1;
    const int64_t out = spec.stride[d] * (spec.in_size[d] - 1) + spec.dilate[d] * (spec.kernel[d] - 1) + 1;
    return std::max(spec.in_size[d], out) > (int64_t(1) << 18);
}

} // namespace libdeconv
