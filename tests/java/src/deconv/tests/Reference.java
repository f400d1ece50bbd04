package deconv.tests;

import deconv.DeconvParams;
import deconv.Layout;

/**
 * The deconvolution written straight from its definition, in double: output position
 * o = i * stride + k * dilate - pad (per spatial dim) receives src[i] * weights[k]. Problems of
 * rank 1 and 2 are computed as rank 3 with leading dimensions of size 1. Weights are
 * (in_channels, out_channels / groups, kernel...), data tensors channels-first; use
 * {@link #toChannelsLast} / {@link #toChannelsFirst} for the other layout.
 */
final class Reference {
    final int batch, inC, outC, groups, icg, ocg;
    final int[] in = new int[3], out = new int[3], k = new int[3], s = new int[3], p = new int[3], d = new int[3];
    final int inPixels, outPixels, kPixels;

    Reference(DeconvParams params, long[] outputShape) {
        int r = params.rank();
        batch = (int) params.batch();
        inC = (int) params.inChannels();
        outC = (int) params.outChannels();
        groups = (int) params.groups();
        icg = inC / groups;
        ocg = outC / groups;
        for (int i = 0; i < 3; i++) {
            int j = i - (3 - r); // entry of the rank-r arrays, or < 0 for a leading unit dimension
            in[i] = j < 0 ? 1 : (int) params.inSize()[j];
            out[i] = j < 0 ? 1 : (int) outputShape[j];
            k[i] = j < 0 ? 1 : (int) params.kernel()[j];
            s[i] = j < 0 ? 1 : (int) params.stride()[j];
            d[i] = j < 0 ? 1 : (int) params.dilate()[j];
            // With target_shape the pad is InferPad's, which the caller passes as outputShape.
            p[i] = j < 0 ? 0 : (int) pad(params, j);
        }
        inPixels = in[0] * in[1] * in[2];
        outPixels = out[0] * out[1] * out[2];
        kPixels = k[0] * k[1] * k[2];
    }

    private static long pad(DeconvParams params, int j) {
        long target = params.targetShape()[j];
        if (target == 0) return params.pad()[j];
        long total = params.stride()[j] * (params.inSize()[j] - 1) + params.dilate()[j] * (params.kernel()[j] - 1) + 1;
        return (total - target + 1) / 2;
    }

    /** Calls f(srcIndex, weightsIndex, dstIndex) for every term of the sum. */
    interface Term {
        void apply(int src, int weights, int dst);
    }

    void forEachTerm(Term f) {
        for (int n = 0; n < batch; n++)
            for (int g = 0; g < groups; g++)
                for (int ic = 0; ic < icg; ic++)
                    for (int oc = 0; oc < ocg; oc++)
                        for (int i0 = 0; i0 < in[0]; i0++)
                            for (int i1 = 0; i1 < in[1]; i1++)
                                for (int i2 = 0; i2 < in[2]; i2++)
                                    for (int k0 = 0; k0 < k[0]; k0++)
                                        for (int k1 = 0; k1 < k[1]; k1++)
                                            for (int k2 = 0; k2 < k[2]; k2++) {
                                                int o0 = i0 * s[0] + k0 * d[0] - p[0];
                                                int o1 = i1 * s[1] + k1 * d[1] - p[1];
                                                int o2 = i2 * s[2] + k2 * d[2] - p[2];
                                                if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2])
                                                    continue;
                                                int c = g * icg + ic, co = g * ocg + oc;
                                                int src = ((n * inC + c) * in[0] + i0) * in[1] * in[2] + i1 * in[2] + i2;
                                                int w = ((c * ocg + oc) * k[0] + k0) * k[1] * k[2] + k1 * k[2] + k2;
                                                int dst = ((n * outC + co) * out[0] + o0) * out[1] * out[2] + o1 * out[2] + o2;
                                                f.apply(src, w, dst);
                                            }
    }

    double[] forward(float[] src, float[] weights, float[] bias) {
        double[] dst = new double[batch * outC * outPixels];
        if (bias != null)
            for (int i = 0; i < dst.length; i++) dst[i] = bias[i / outPixels % outC];
        forEachTerm((x, w, y) -> dst[y] += (double) src[x] * weights[w]);
        return dst;
    }

    double[] backwardData(float[] weights, float[] diffDst) {
        double[] diffSrc = new double[batch * inC * inPixels];
        forEachTerm((x, w, y) -> diffSrc[x] += (double) diffDst[y] * weights[w]);
        return diffSrc;
    }

    double[] backwardWeights(float[] src, float[] diffDst) {
        double[] diffWeights = new double[inC * ocg * kPixels];
        forEachTerm((x, w, y) -> diffWeights[w] += (double) src[x] * diffDst[y]);
        return diffWeights;
    }

    double[] backwardBias(float[] diffDst) {
        double[] diffBias = new double[outC];
        for (int i = 0; i < diffDst.length; i++) diffBias[i / outPixels % outC] += diffDst[i];
        return diffBias;
    }

    /** N,C,spatial -> N,spatial,C. */
    static float[] toChannelsLast(float[] a, int batch, int channels) {
        int pixels = a.length / (batch * channels);
        float[] b = new float[a.length];
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < channels; c++)
                for (int q = 0; q < pixels; q++) b[(n * pixels + q) * channels + c] = a[(n * channels + c) * pixels + q];
        return b;
    }

    /** N,spatial,C -> N,C,spatial. */
    static float[] toChannelsFirst(float[] a, int batch, int channels) {
        int pixels = a.length / (batch * channels);
        float[] b = new float[a.length];
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < channels; c++)
                for (int q = 0; q < pixels; q++) b[(n * channels + c) * pixels + q] = a[(n * pixels + q) * channels + c];
        return b;
    }

    static boolean isChannelsLast(DeconvParams params) {
        return params.layout() == Layout.CHANNELS_LAST;
    }
}
