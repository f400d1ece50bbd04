#!/usr/bin/env python3
"""Writes the seed corpus of deconv_fuzz (tests/fuzz/corpus/) in the input format described at
the top of deconv_fuzz.c, and the seeds too slow for it (SLOW) to tests/fuzz/slow_seeds/, which
fuzz_slow_seeds replays apart. The files are committed; run this again only after changing the
format:
    python3 tests/fuzz/make_corpus.py tests/fuzz/corpus tests/fuzz/slow_seeds
"""
import os
import sys

SPECIAL = {0: 0, -1: 1, 1: 2, "i64max": 3, "i64min": 4, "2^40": 5, "2^40+1": 6, "i32max": 7,
           "i32max+1": 8, "2^62": 9, "sqrt2^63": 10, "-2^40": 11, 65537: 12, 4096: 13}


def val(v, lo=0, hi=None):
    """A value byte: small v in [lo, hi] (stored as v - lo), a special value by name, or
    ("raw", int64); small values outside [lo, hi] are written raw."""
    if isinstance(v, str):
        return [0xF0 + SPECIAL[v]]
    if isinstance(v, tuple) or not lo <= v <= (lo + 0xEF if hi is None else hi):
        raw = v[1] if isinstance(v, tuple) else v
        return [0xFE] + list((raw & (2**64 - 1)).to_bytes(8, "big"))
    return [v - lo]


def params(rank=2, dtype=0, layout=0, mode=1, no_bias=0, batch=2, groups=1, icg=2, ocg=3,
           in_size=(4, 3, 2), kernel=(3, 2, 2), stride=(2, 1, 2), pad=(1, 0, 0), dilate=(1, 1, 1),
           adj=(1, 0, 0), target=None, struct_size_wrong=None, buffers=0x04):
    b = val(rank, 1, 3) + val(dtype, 0, 1) + val(layout, 0, 1) + val(mode, 0, 1) + val(no_bias, 0, 1)
    b += val(batch, 1, 3) + val(groups, 1, 4) + val(icg, 1, 4) + val(ocg, 1, 4)
    for d in range(3):
        b += val(in_size[d], 1, 6) + val(kernel[d], 1, 5) + val(stride[d], 1, 4) + val(pad[d], 0, 3)
        b += val(dilate[d], 1, 3) + val(adj[d], 0, 3)
    if target is None:
        b += [0]
    else:
        b += [0xC0]
        for t in target:
            b += val(t, 1, 16)
    b += [0 if struct_size_wrong is None else 0xF8 + struct_size_wrong]
    b += [buffers]
    return b


# ops (op byte = code; see run_op in deconv_fuzz.c)
def set_weights(bits=0x06): return [0, bits]                       # bit0 NULL handle, 1 w, 2 b
def forward(bits=0x1E, req=1): return [1, bits, req]               # 1 src 2 w 3 b 4 dst
def backward(bits=0x7E, rs=1, rw=1, rb=1): return [3, bits, 0, rs, rw, rb]  # 1 src 2 w 3 dd 4 ds 5 dw 6 db
def impl_name(pass_=0, null=0): return [5, pass_ << 1 | null]
def recreate(toggle=0): return [6, toggle]
def queries(bits): return [7, bits]
def cache(v): return [8, v]
def convert(v): return [9, v]
def misc(v): return [10, v]

NO_BIAS_FWD = 0x16  # src, weights, dst
NO_BIAS_SW = 0x02
GOOD_TRAIN = (set_weights() + forward() + forward(0x12) + backward() + backward(rs=2, rw=2, rb=2)
              + impl_name(0) + impl_name(1) + impl_name(2))
GOOD_INFER = set_weights() + forward() + forward(0x12, 2) + impl_name(0) + impl_name(1)

seeds = {
    # valid problems, every pass
    "train_2d_f32": params() + GOOD_TRAIN,
    "train_2d_bf16": params(dtype=1) + GOOD_TRAIN,
    "train_2d_f32_nhwc": params(layout=1) + GOOD_TRAIN,
    "train_2d_bf16_nhwc": params(dtype=1, layout=1) + GOOD_TRAIN,
    "train_1d": params(rank=1, in_size=(5, 1, 1), kernel=(4, 1, 1), stride=(3, 1, 1), adj=(2, 0, 0)) + GOOD_TRAIN,
    "train_3d": params(rank=3, batch=1, in_size=(2, 3, 2), kernel=(2, 2, 3), stride=(2, 1, 2)) + GOOD_TRAIN,
    "train_3d_bf16_nhwc": params(rank=3, batch=1, dtype=1, layout=1) + GOOD_TRAIN,
    "train_groups": params(groups=2, icg=2, ocg=2) + GOOD_TRAIN,
    "train_depthwise": params(groups=4, icg=1, ocg=1, layout=1) + GOOD_TRAIN,
    "train_dilate": params(dilate=(2, 3, 1), pad=(2, 1, 0)) + GOOD_TRAIN,
    "train_no_bias": params(no_bias=1) + set_weights(NO_BIAS_SW) + forward(NO_BIAS_FWD)
                     + backward(rb=0) + backward(0x7E, 0, 0, 1),
    "train_target": params(target=(8, 4, 1)) + GOOD_TRAIN,
    "train_target_odd": params(rank=1, target=(6, 1, 1), in_size=(4, 1, 1), kernel=(4, 1, 1)) + GOOD_TRAIN,
    "infer_2d": params(mode=0) + GOOD_INFER,
    "infer_bf16_nhwc": params(mode=0, dtype=1, layout=1) + GOOD_INFER,
    "guard_pages": params(buffers=0x05) + GOOD_TRAIN,
    "guard_pages_bf16": params(dtype=1, layout=1, buffers=0x09) + GOOD_TRAIN,
    "special_floats": params(buffers=0x0E) + GOOD_TRAIN,
    "bias_only_grad": params() + backward(0x48, 0, 0, 1) + backward(0x48, 0, 0, 2),
    "weights_only_grad": params(groups=2, icg=1, ocg=2) + backward(0x2A, 0, 1, 0),
    # careless callers
    "forward_before_set_weights": params(mode=0) + forward(0x12) + set_weights() + forward(0x12),
    "null_handle": params() + set_weights(0x07) + forward(0x1F) + backward(0x7F) + impl_name(0, 1),
    "null_buffers": params() + forward(0x00) + forward(0x02) + backward(0x00) + backward(0x08, 1, 0, 0)
                    + forward(),
    "bad_reqs": params() + forward(0x1E, 0xF0) + forward(0x1E, 0xF1) + backward(0x7E, 0xF2, 1, 1)
                + backward(0x7E, 1, 0xF3, 1) + backward(0x7E, 1, 1, 0xF4) + forward(),
    "req_null_everything": params() + forward(0x02, 0) + backward(0x00, 0, 0, 0) + forward(0x1E, 0),
    "backward_on_inference": params(mode=0) + backward() + recreate(1) + backward(),
    "bias_on_no_bias": params(no_bias=1) + set_weights() + forward() + backward() + set_weights(NO_BIAS_SW),
    "bad_pass": params(mode=0) + impl_name(3) + impl_name(1) + [5, 0xFF] + impl_name(0),
    "recreate_and_reuse": params() + set_weights() + recreate(1) + forward(0x12) + recreate(1) + forward(0x12)
                          + backward(),
    "cache_eviction": params() + cache(0) + forward() + cache(4) + backward() + cache(2) + forward(0x12)
                      + set_weights() + cache(1) + cache(0x1F) + cache(0x03),
    "queries_null": params() + queries(1) + queries(2) + queries(4) + queries(8) + queries(16) + queries(0),
    "convert_and_misc": params() + convert(0x08) + convert(0x48) + convert(0x88) + misc(1) + misc(2) + misc(0xFF),
    # invalid problems: validation paths
    "rank0": params(rank=0) + forward(),
    "rank4": params(rank=4) + forward(),
    "rank_neg": params(rank=-1) + forward(),
    "adj_ge_stride": params(adj=(2, 0, 0)) + forward() + queries(0),
    "output_below_1": params(pad=(5, 0, 0)) + forward(),
    "partial_target": params(rank=2, target=(8, 0, 1)) + forward(),
    "target_too_big": params(target=(16, 16, 16)) + forward(),
    "groups_not_dividing": params(groups=3, icg=("raw", 4)) + forward(),
    "groups_zero": params(groups=0) + forward(),
    "struct_size_wrong": params(struct_size_wrong=3) + forward() + queries(0),
    "struct_size_zero": params(struct_size_wrong=0) + forward(),
    "garbage_dtype": params(dtype=("raw", 7)) + forward(),
    "garbage_layout": params(layout=("raw", -3)) + forward(),
    "garbage_mode": params(mode=("raw", 1 << 31)) + forward(),
    "huge_in_size": params(in_size=("2^40", 1, 1)) + forward() + queries(0),
    "huge_in_size_plus1": params(in_size=("2^40+1", 1, 1)) + forward(),
    "overflow_kernel_dilate": params(rank=1, kernel=("2^40", 1, 1), dilate=("2^40", 1, 1)) + forward(),
    "overflow_stride_in": params(rank=1, in_size=("2^40", 1, 1), stride=("2^40", 1, 1)) + forward(),
    "overflow_channels": params(batch="i64max", groups=1, icg="i64max", ocg="sqrt2^63") + forward(),
    "negative_pad": params(pad=("-2^40", 0, 0)) + forward(),
    "big_valid_noncompute": params(rank=1, batch=1, icg=1, ocg=1, in_size=(65537, 1, 1)) + forward() + backward()
                            + impl_name(2),
    "int32_limits": params(rank=1, batch=1, icg=1, ocg=1, in_size=("i32max+1", 1, 1)) + forward() + impl_name(0),
    "unused_dims_garbage": params(rank=1, in_size=(3, "i64min", "-2^40"), kernel=(2, "2^62", 0)) + GOOD_TRAIN,
    # regressions: problems the fuzzer (or its first runs) found library bugs with
    "regress_out_2p31": params(rank=1, batch=1, icg=1, ocg=1, in_size=(2, 1, 1), stride=(2**31 - 1, 1, 1),
                               adj=(0, 0, 0)) + forward(),                       # SIGFPE in oneDNN
    "regress_in_2p31": params(rank=1, batch=1, icg=1, ocg=1, in_size=(2**31, 1, 1), stride=(1, 1, 1),
                              adj=(0, 0, 0)) + forward(),
    "regress_groups_2p31": params(groups=("raw", 2**31), icg=("raw", 2**31), ocg=("raw", 2**31)) + forward(),
    "regress_stride_in_size_1": params(mode=0, dtype=1, batch=1, icg=1, ocg=1, in_size=(3, 1, 1), kernel=(1, 1, 1),
                                       stride=(4, 2**31 - 1, 1), pad=(0, 0, 0), adj=(0, 0, 0)) + GOOD_INFER,
    "regress_dilate_amx_bf16": params(dtype=1, batch=1, icg=4, ocg=2, in_size=(3, 2, 1), kernel=(3, 1, 1),
                                      stride=(2, 4, 1), pad=(1, 0, 0), dilate=(2**22, 2, 1), adj=(0, 0, 0))
                               + forward(),                                      # kernel failed to build
    "regress_amx_stride64_1d": params(rank=1, mode=0, dtype=1, batch=1, icg=1, ocg=1, in_size=(2, 1, 1),
                                      kernel=(1, 1, 1), stride=(64, 1, 1), pad=(0, 0, 0), adj=(0, 0, 0))
                               + GOOD_INFER,                                     # SEGV in oneDNN's AMX kernel
    "regress_amx_stride48_2d": params(mode=0, dtype=1, batch=1, groups=4, icg=4, ocg=4, in_size=(3, 3, 1),
                                      kernel=(2, 2, 1), stride=(1, 48, 1), pad=(0, 0, 0), adj=(0, 0, 0))
                               + GOOD_INFER,
    "regress_huge_pad": params(rank=1, batch=1, icg=1, ocg=1, in_size=(2, 1, 1), kernel=(3, 1, 1),
                               stride=(1500000000, 1, 1), pad=(749999998, 0, 0), adj=(0, 0, 0))
                        + forward(0x00),                                         # INTERNAL_ERROR
    "regress_amx_bwd_data_65536_channels": params(rank=1, dtype=1, layout=1, batch=1, icg=1, ocg=("raw", 65536),
                                                  in_size=(1, 1, 1), kernel=(2, 1, 1), stride=(3, 1, 1),
                                                  pad=(0, 0, 0), adj=(0, 0, 0)) + forward(0x00),  # SEGV in oneDNN
    "regress_route_timing_big": params(dtype=1, layout=1, groups=2, icg=2, ocg=2, in_size=(4, 2**22, 1),
                                       kernel=(3, 1, 1), stride=(2, 1, 1), pad=(1, 0, 0), adj=(1, 0, 0))
                                + forward(0x00),                                 # GBs inside deconv_create
}


# Seeds that take minutes under ASan (their handles time full-size candidates: a dilation of 2^22
# writes outputs of 84M elements): in corpus/ they took nearly all of fuzz_bounded's time, which
# libFuzzer only counts after replaying its corpus, so it fuzzed nothing new.
SLOW = {"regress_dilate_amx_bf16"}


def main():
    here = os.path.dirname(__file__)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    slow_out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "slow_seeds")
    for d in (out, slow_out):
        os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(slow_out if name in SLOW else out, name), "wb") as f:
            f.write(bytes(data))
    print(f"{len(seeds) - len(SLOW)} seeds in {out}, {len(SLOW)} in {slow_out}")


if __name__ == "__main__":
    main()
