using System;

namespace Deconv.Tests
{
    /// <summary>
    /// Naive deconvolution from its definition, channels-first, for any rank (missing spatial
    /// dimensions are treated as size 1): input position i and kernel tap k feed output
    /// o = i * stride + k * dilate - pad, in every dimension. Backward is the same sum read the
    /// other way round. Doubles, so the reference's own rounding is negligible.
    /// </summary>
    internal sealed class Reference
    {
        private readonly long n, ic, oc, g;
        private readonly long[] inS = new long[3], k = new long[3], s = new long[3], p = new long[3],
            d = new long[3], outS = new long[3];
        private readonly bool bias;

        internal Reference(DeconvParams prm)
        {
            n = prm.Batch; ic = prm.InChannels; oc = prm.OutChannels; g = prm.Groups; bias = !prm.NoBias;
            int off = 3 - prm.Rank;
            for (int i = 0; i < 3; i++)
            {
                bool real = i >= off;
                inS[i] = real ? prm.InSize[i - off] : 1;
                k[i] = real ? prm.Kernel[i - off] : 1;
                s[i] = real ? prm.Stride[i - off] : 1;
                p[i] = real ? prm.Pad[i - off] : 0;
                d[i] = real ? prm.Dilate[i - off] : 1;
                long adj = real ? prm.Adj[i - off] : 0;
                outS[i] = s[i] * (inS[i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * p[i] + adj;
            }
        }

        internal long DstSize => n * oc * outS[0] * outS[1] * outS[2];

        // Calls f(srcIndex, weightIndex, dstIndex) for every product term of the deconvolution.
        private void ForEachTerm(Action<long, long, long> f)
        {
            long icg = ic / g, ocg = oc / g;
            long inPlane = inS[0] * inS[1] * inS[2], outPlane = outS[0] * outS[1] * outS[2];
            long kPlane = k[0] * k[1] * k[2];
            for (long b = 0; b < n; b++)
            for (long c = 0; c < ic; c++)
            for (long co = 0; co < ocg; co++)
            {
                long grp = c / icg, cOut = grp * ocg + co;
                for (long i0 = 0; i0 < inS[0]; i0++)
                for (long i1 = 0; i1 < inS[1]; i1++)
                for (long i2 = 0; i2 < inS[2]; i2++)
                for (long k0 = 0; k0 < k[0]; k0++)
                for (long k1 = 0; k1 < k[1]; k1++)
                for (long k2 = 0; k2 < k[2]; k2++)
                {
                    long o0 = i0 * s[0] + k0 * d[0] - p[0];
                    long o1 = i1 * s[1] + k1 * d[1] - p[1];
                    long o2 = i2 * s[2] + k2 * d[2] - p[2];
                    if (o0 < 0 || o0 >= outS[0] || o1 < 0 || o1 >= outS[1] || o2 < 0 || o2 >= outS[2])
                        continue;
                    long si = (b * ic + c) * inPlane + (i0 * inS[1] + i1) * inS[2] + i2;
                    long wi = (c * ocg + co) * kPlane + (k0 * k[1] + k1) * k[2] + k2;
                    long di = (b * oc + cOut) * outPlane + (o0 * outS[1] + o1) * outS[2] + o2;
                    f(si, wi, di);
                }
            }
        }

        internal double[] Forward(float[] src, float[] w, float[] bs)
        {
            var dst = new double[DstSize];
            long outPlane = outS[0] * outS[1] * outS[2];
            if (bias)
                for (long i = 0; i < dst.LongLength; i++) dst[i] = bs[(i / outPlane) % oc];
            ForEachTerm((si, wi, di) => dst[di] += (double)src[si] * w[wi]);
            return dst;
        }

        internal double[] BackwardData(float[] w, float[] diffDst, long srcSize)
        {
            var diffSrc = new double[srcSize];
            ForEachTerm((si, wi, di) => diffSrc[si] += (double)diffDst[di] * w[wi]);
            return diffSrc;
        }

        internal double[] BackwardWeights(float[] src, float[] diffDst, long weightsSize)
        {
            var diffW = new double[weightsSize];
            ForEachTerm((si, wi, di) => diffW[wi] += (double)src[si] * diffDst[di]);
            return diffW;
        }

        internal double[] BackwardBias(float[] diffDst)
        {
            var diffB = new double[oc];
            long outPlane = outS[0] * outS[1] * outS[2];
            for (long i = 0; i < diffDst.LongLength; i++) diffB[(i / outPlane) % oc] += diffDst[i];
            return diffB;
        }
    }
}
