using System;
using NUnit.Framework;

namespace Deconv.Tests
{
    /// <summary>Every failure raises DeconvException with the status and a message naming the
    /// argument (binding checks) or deconv_last_error() (library checks); outputs stay untouched.</summary>
    [TestFixture]
    public class ErrorTests
    {
        private static float[] Src => new float[160];
        private static float[] W => new float[72];
        private static float[] B => new float[6];

        private static void AssertUntouched(float[] a, float sentinel)
        {
            foreach (var v in a) Assert.AreEqual(sentinel, v, "an output was written on failure");
        }

        [Test]
        public void InvalidParamsNameTheField()
        {
            var p = Problems.Grouped();
            p.Rank = 4;
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "rank", "4");
            Problems.Throws(() => p.OutputShape(), Status.InvalidArgument, "rank");

            p = Problems.Grouped();
            p.Groups = 3;
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "groups");

            p = Problems.Grouped();
            p.Adj = new long[] { 2, 0 }; // stride[0] is 2
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "adj[0]");

            p = Problems.Grouped();
            p.Kernel = new long[] { 3, 0 };
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "kernel[1]");

            p = Problems.Grouped();
            p.DType = (DType)9;
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "dtype");

            Problems.Throws(() => new Deconvolution(null), Status.InvalidArgument, "params");
        }

        [Test]
        public void ParamsArraysAreChecked()
        {
            var p = new DeconvParams();
            var e = Problems.Throws(() => p.InSize = new long[] { 1, 2, 3, 4 }, Status.InvalidArgument);
            Assert.AreEqual("in_size: 4 values given, 1 to 3 expected", e.Message);
            e = Problems.Throws(() => p.Kernel = new long[0], Status.InvalidArgument);
            Assert.AreEqual("kernel: 0 values given, 1 to 3 expected", e.Message);
            e = Problems.Throws(() => p.Stride = null, Status.InvalidArgument);
            Assert.AreEqual("stride: null, but 1 to 3 values are expected", e.Message);
            e = Problems.Throws(() => new Deconvolution(null), Status.InvalidArgument);
            Assert.AreEqual("params: null, but a Deconvolution needs the problem to create", e.Message);
        }

        [Test]
        public void ParamsArraysMustHaveRankValues()
        {
            // As in Java: refused when the problem is used (not padded to {5, 1}), so that the
            // properties can be set in any order.
            var p = new DeconvParams { Rank = 2, InChannels = 1, OutChannels = 1, InSize = new long[] { 5 } };
            var e = Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument);
            Assert.AreEqual("in_size: 1 values given for rank = 2", e.Message);
            e = Problems.Throws(() => p.OutputShape(), Status.InvalidArgument);
            Assert.AreEqual("in_size: 1 values given for rank = 2", e.Message);

            p = Problems.Grouped();
            p.Kernel = new long[] { 3, 3, 3 };
            e = Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument);
            Assert.AreEqual("kernel: 3 values given for rank = 2", e.Message);
            p.Rank = 3; // now the 2-value arrays are the wrong ones
            Problems.Throws(() => p.OutputShape(), Status.InvalidArgument, "values given for rank = 3");

            // Setting the rank to match makes the same object valid; arrays never set need no values.
            p = new DeconvParams { InSize = new long[] { 5 }, Kernel = new long[] { 3 } };
            Problems.Throws(() => p.OutputShape(), Status.InvalidArgument, "rank = 2");
            p.Rank = 1;
            CollectionAssert.AreEqual(new long[] { 7 }, p.OutputShape());
            // An invalid rank is left to the library, whose message names it.
            p.Rank = 0;
            Problems.Throws(() => new Deconvolution(p), Status.InvalidArgument, "rank");
        }

        [Test]
        public void ShortBuffersAreRejectedBeforeTheCall()
        {
            using (var d = new Deconvolution(Problems.Grouped()))
            {
                var dst = Problems.Filled(719, 7f);
                var e = Problems.Throws(() => d.Forward(Src, W, B, dst), Status.InvalidArgument);
                Assert.AreEqual("dst: 719 elements, the problem needs 720", e.Message);
                AssertUntouched(dst, 7f);
                Problems.Throws(() => d.Forward(new float[159], W, B, new float[720]),
                                Status.InvalidArgument, "src: 159 elements, the problem needs 160");
                Problems.Throws(() => d.Forward(Src, new float[71], B, new float[720]),
                                Status.InvalidArgument, "weights: 71 elements");
                Problems.Throws(() => d.Forward(Src, W, new float[5], new float[720]),
                                Status.InvalidArgument, "bias: 5 elements");
                Problems.Throws(() => d.SetWeights(new float[1], B), Status.InvalidArgument, "weights: 1 elements");
                var dd = new float[720];
                Problems.Throws(() => d.Backward(Src, W, new float[700], new float[160], Req.Write,
                                                 null, Req.Null, null, Req.Null),
                                Status.InvalidArgument, "diff_dst: 700 elements");
                Problems.Throws(() => d.Backward(Src, W, dd, new float[10], Req.Write, null, Req.Null, null, Req.Null),
                                Status.InvalidArgument, "diff_src: 10 elements");
                Problems.Throws(() => d.Backward(Src, W, dd, null, Req.Null, new float[10], Req.Write, null, Req.Null),
                                Status.InvalidArgument, "diff_weights: 10 elements");
                Problems.Throws(() => d.Backward(Src, W, dd, null, Req.Null, null, Req.Null, new float[1], Req.Write),
                                Status.InvalidArgument, "diff_bias: 1 elements");
                Problems.Throws(() => DeconvLibrary.F32ToBf16(new float[4], new ushort[3]),
                                Status.InvalidArgument, "dst: 3 elements, src has 4");
            }
        }

        [Test]
        public unsafe void PointerLengthsAreChecked()
        {
            using (var d = new Deconvolution(Problems.Grouped()))
            {
                var s = Src; var w = W; var b = B; var dst = new float[720];
                fixed (float* ps = s, pw = w, pb = b, pd = dst)
                {
                    float* ps2 = ps, pw2 = pw, pb2 = pb, pd2 = pd; // lambdas cannot capture fixed locals
                    Problems.Throws(() => d.Forward(ps2, 160, pw2, 72, pb2, 6, pd2, 100),
                                    Status.InvalidArgument, "dst: 100 elements, the problem needs 720");
                }
            }
        }

        [Test]
        public void WrongElementTypeNamesDtype()
        {
            using (var d = new Deconvolution(Problems.Grouped()))
                Problems.Throws(() => d.Forward(new ushort[160], new ushort[72], new ushort[6], new ushort[720]),
                                Status.InvalidArgument, "dtype", "F32");
            using (var d = new Deconvolution(Problems.Grouped(Mode.Inference, DType.BF16)))
                Problems.Throws(() => d.Forward(Src, W, B, new float[720]), Status.InvalidArgument, "dtype", "BF16");
        }

        [Test]
        public void LibraryErrorsCarryLastError()
        {
            using (var inference = new Deconvolution(Problems.Grouped(Mode.Inference)))
            {
                var dst = Problems.Filled(720, 7f);
                Problems.Throws(() => inference.Forward(Src, dst), Status.InvalidArgument, "weights");
                AssertUntouched(dst, 7f);
                var ds = Problems.Filled(160, 7f);
                Problems.Throws(() => inference.Backward(Src, W, new float[720], ds, Req.Write,
                                                         null, Req.Null, null, Req.Null),
                                Status.InvalidArgument, "mode");
                AssertUntouched(ds, 7f);
                Problems.Throws(() => inference.ImplName(Pass.BackwardData), Status.InvalidArgument);
                Problems.Throws(() => inference.Forward(Src, W, null, dst), Status.InvalidArgument, "bias");
                Problems.Throws(() => inference.Forward(Src, W, B, dst, (Req)7), Status.InvalidArgument, "req");
                AssertUntouched(dst, 7f);
            }
            var p = Problems.Grouped();
            p.NoBias = true;
            using (var noBias = new Deconvolution(p))
            {
                Problems.Throws(() => noBias.Forward(Src, W, B, new float[720]), Status.InvalidArgument, "bias");
                Problems.Throws(() => noBias.Backward(Src, W, new float[720], null, Req.Null, null, Req.Null,
                                                      B, Req.Write),
                                Status.InvalidArgument, "req_bias");
                noBias.Forward(Src, W, null, new float[720]); // and without bias it works
            }
        }
    }
}
