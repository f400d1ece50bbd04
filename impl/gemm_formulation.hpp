// Problems where every output pixel is written by exactly one input pixel are matrix products:
// with P the (input pixels x out_channels*taps) patch matrix,
//   forward          P = src (pixels x in_channels) * weights (in_channels x out_channels*taps)
//   backward data    diff_src = P(diff_dst) * weights^T
//   backward weights diff_weights = src^T * P(diff_dst)
// where P(t) is the output tensor t with its pixels regrouped by the input pixel that wrote them
// (the identity when in_size is 1 everywhere and the layout is channels-first). That holds for
// groups 1, no pad, adj or dilation, and in every dimension stride == kernel or in_size 1: the
// upsampling layers of U-Nets and the first layer of GANs. oneDNN's matmul runs them several
// times faster than its deconvolution kernels (1 thread: unet.up1 bf16 3.5x, dcgan.l1 5-8x).
#pragma once

#include "descriptors.hpp"

namespace libdeconv {

bool is_matrix_product(const Problem &problem);

// Makes `pass` of such a problem a matmul computing in `type`; false (plan untouched) when oneDNN
// has only a reference matmul for it.
bool make_matrix_product(Plan &plan, const Problem &problem, Pass pass, dnnl::memory::data_type type);

// Other problems of groups 1, forward: the same matmul gives the patch matrix P, whose patches
// overlap in the output where the stride is smaller than the dilated kernel; their sums are
// gathered into the caller's buffer (patch_gather.hpp: col2im), with the bias and an add request.
// oneDNN's sgemm runs the matmul of large channel counts on small images faster than its AVX2
// deconvolution kernels (dcgan.l2 f32, library / plain oneDNN: 0.81-1.03 -> 0.46-0.54; its sgemm
// alone 30-33 ms where oneDNN's jit:avx2 deconvolution takes 48-52). Offered where P holds at
// most 4 values per output element (kernel taps over stride: 4 for a 4x4 kernel of stride 2) and
// 256 MB.
bool is_patches_candidate(const Problem &problem, Pass pass);

// Makes the forward pass of such a problem that matmul (in f32) and gather; false (plan
// untouched) when oneDNN has only a reference matmul for it.
bool make_patches_product(Plan &plan, const Problem &problem);

} // namespace libdeconv
