using System;
using NUnit.Framework;

namespace Deconv.Tests
{
    /// <summary>Shared problems and data for the tests.</summary>
    internal static class Problems
    {
        // Every parameter away from its default at once (groups, stride, pad, dilate, adj), yet
        // small: src 160, weights 72, dst 2*6*10*6 = 720 elements.
        internal static DeconvParams Grouped(Mode mode = Mode.Training, DType dtype = DType.F32)
        {
            return new DeconvParams
            {
                Rank = 2, Batch = 2, InChannels = 4, OutChannels = 6, Groups = 2,
                InSize = new long[] { 5, 4 }, Kernel = new long[] { 3, 2 }, Stride = new long[] { 2, 1 },
                Pad = new long[] { 1, 0 }, Dilate = new long[] { 1, 2 }, Adj = new long[] { 1, 0 },
                Mode = mode, DType = dtype,
            };
        }

        internal static float[] Random(long count, int seed)
        {
            var r = new Random(seed);
            var a = new float[count];
            for (long i = 0; i < count; i++) a[i] = (float)(r.NextDouble() * 2 - 1);
            return a;
        }

        internal static float[] Filled(long count, float value)
        {
            var a = new float[count];
            for (long i = 0; i < count; i++) a[i] = value;
            return a;
        }

        // f32: at most 40 products of values in [-1, 1] per output here (the weight gradient
        // sums over batch 2 x 20 input positions); float rounding of such a sum, in whatever
        // order oneDNN adds, stays below 40 * 40 * 2^-24 ~ 1e-4.
        internal const double F32Tolerance = 1e-4;

        internal static void AssertClose(double[] expected, float[] actual, double tolerance, string what)
        {
            Assert.That(actual.LongLength, Is.GreaterThanOrEqualTo(expected.LongLength), what + " length");
            for (long i = 0; i < expected.LongLength; i++)
                if (Math.Abs(expected[i] - actual[i]) > tolerance * (1 + Math.Abs(expected[i])))
                    Assert.Fail("{0}[{1}]: expected {2}, got {3}", what, i, expected[i], actual[i]);
        }

        internal static DeconvException Throws(TestDelegate code, Status status, params string[] fragments)
        {
            var e = Assert.Throws<DeconvException>(code);
            Assert.AreEqual(status, e.Status, e.Message);
            foreach (var f in fragments) StringAssert.Contains(f, e.Message);
            return e;
        }
    }
}
