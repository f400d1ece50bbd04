using System;
using System.Runtime.InteropServices;
using System.Threading;
using NUnit.Framework;

namespace Deconv.Tests
{
    [TestFixture]
    public class ComputeTests
    {
        private DeconvParams prm;
        private Reference reference;
        private float[] src, weights, bias;

        [SetUp]
        public void SetUp()
        {
            prm = Problems.Grouped();
            reference = new Reference(prm);
            src = Problems.Random(160, 1);
            weights = Problems.Random(72, 2);
            bias = Problems.Random(6, 3);
        }

        [Test]
        public void DefaultsAreThoseOfParamsInit()
        {
            var p = new DeconvParams();
            Assert.AreEqual(2, p.Rank);
            Assert.AreEqual(1, p.Batch);
            Assert.AreEqual(1, p.InChannels);
            Assert.AreEqual(1, p.OutChannels);
            Assert.AreEqual(1, p.Groups);
            CollectionAssert.AreEqual(new long[] { 1, 1 }, p.InSize);
            CollectionAssert.AreEqual(new long[] { 1, 1 }, p.Kernel);
            CollectionAssert.AreEqual(new long[] { 1, 1 }, p.Stride);
            CollectionAssert.AreEqual(new long[] { 1, 1 }, p.Dilate);
            CollectionAssert.AreEqual(new long[] { 0, 0 }, p.Pad);
            CollectionAssert.AreEqual(new long[] { 0, 0 }, p.Adj);
            CollectionAssert.AreEqual(new long[] { 0, 0 }, p.TargetShape);
            Assert.IsFalse(p.NoBias);
            Assert.AreEqual(DType.F32, p.DType);
            Assert.AreEqual(Layout.ChannelsFirst, p.Layout);
            Assert.AreEqual(Mode.Inference, p.Mode);
        }

        [Test]
        public void SizesAndOutputShape()
        {
            using (var d = new Deconvolution(prm))
            {
                Assert.AreEqual(160, d.SrcSize);
                Assert.AreEqual(72, d.WeightsSize);
                Assert.AreEqual(6, d.BiasSize);
                Assert.AreEqual(720, d.DstSize);
                CollectionAssert.AreEqual(new long[] { 10, 6 }, d.OutputShape);
                Assert.AreEqual(DType.F32, d.DType);
                StringAssert.IsMatch(".+", d.ImplName(Pass.Forward));
            }
            CollectionAssert.AreEqual(new long[] { 10, 6 }, prm.OutputShape());
            var noBias = Problems.Grouped();
            noBias.NoBias = true;
            using (var d = new Deconvolution(noBias)) Assert.AreEqual(0, d.BiasSize);
        }

        [Test]
        public void ForwardMatchesReference()
        {
            var expected = reference.Forward(src, weights, bias);
            using (var d = new Deconvolution(prm))
            {
                var dst = Problems.Filled(720, float.NaN);
                d.Forward(src, weights, bias, dst);
                Problems.AssertClose(expected, dst, Problems.F32Tolerance, "dst");

                // Add: the library reads what the array holds, in place.
                var acc = Problems.Filled(720, 0.5f);
                d.Forward(src, weights, bias, acc, Req.Add);
                for (int i = 0; i < expected.Length; i++) expected[i] += 0.5;
                Problems.AssertClose(expected, acc, Problems.F32Tolerance, "dst (add)");
            }
        }

        [Test]
        public void ForwardWithSetWeights()
        {
            var expected = reference.Forward(src, weights, bias);
            using (var d = new Deconvolution(Problems.Grouped(Mode.Inference)))
            {
                d.SetWeights(weights, bias);
                // The handle keeps a packed copy: changing the arrays afterwards changes nothing.
                Array.Clear(weights, 0, weights.Length);
                var dst = new float[720];
                d.Forward(src, dst);
                Problems.AssertClose(expected, dst, Problems.F32Tolerance, "dst");
            }
        }

        [Test]
        public void BackwardMatchesReference()
        {
            var diffDst = Problems.Random(720, 4);
            using (var d = new Deconvolution(prm))
            {
                var diffSrc = Problems.Filled(160, float.NaN);
                var diffW = Problems.Filled(72, float.NaN);
                var diffB = Problems.Filled(6, float.NaN);
                d.Backward(src, weights, diffDst, diffSrc, Req.Write, diffW, Req.Write, diffB, Req.Write);
                Problems.AssertClose(reference.BackwardData(weights, diffDst, 160), diffSrc,
                                     Problems.F32Tolerance, "diff_src");
                Problems.AssertClose(reference.BackwardWeights(src, diffDst, 72), diffW,
                                     Problems.F32Tolerance, "diff_weights");
                Problems.AssertClose(reference.BackwardBias(diffDst), diffB, Problems.F32Tolerance,
                                     "diff_bias");

                // Only the bias gradient: everything else may be null.
                var onlyB = new float[6];
                d.Backward(null, null, diffDst, null, Req.Null, null, Req.Null, onlyB, Req.Write);
                Problems.AssertClose(reference.BackwardBias(diffDst), onlyB, Problems.F32Tolerance,
                                     "diff_bias alone");
            }
        }

        [Test]
        public unsafe void PointerOverloadsWriteUnmanagedMemoryInPlace()
        {
            var expected = reference.Forward(src, weights, bias);
            IntPtr mem = Marshal.AllocHGlobal(720 * sizeof(float));
            try
            {
                float* dst = (float*)mem;
                using (var d = new Deconvolution(prm))
                fixed (float* s = src, w = weights, b = bias)
                    d.Forward(s, src.Length, w, weights.Length, b, bias.Length, dst, 720);
                var seen = new float[720];
                Marshal.Copy(mem, seen, 0, 720);
                Problems.AssertClose(expected, seen, Problems.F32Tolerance, "dst (unmanaged)");
            }
            finally
            {
                Marshal.FreeHGlobal(mem);
            }
        }

        [Test]
        public unsafe void PinnedArrayIsWrittenThroughItsAddress()
        {
            // The array overloads pin with `fixed` and pass the address (no marshaller, no copy);
            // here the same happens by hand: the library writes at the address of a GCHandle-pinned
            // array, and the array shows the result.
            var expected = reference.Forward(src, weights, bias);
            var dst = Problems.Filled(720, float.NaN);
            var pin = GCHandle.Alloc(dst, GCHandleType.Pinned);
            try
            {
                using (var d = new Deconvolution(prm))
                fixed (float* s = src, w = weights, b = bias)
                    d.Forward(s, src.Length, w, weights.Length, b, bias.Length,
                              (float*)pin.AddrOfPinnedObject(), dst.Length);
            }
            finally
            {
                pin.Free();
            }
            Problems.AssertClose(expected, dst, Problems.F32Tolerance, "dst (pinned)");
        }

        [Test]
        public void Bf16RoundTrip()
        {
            // Exactly representable values survive; others round to nearest even.
            var exact = new float[] { 0f, 1f, -2f, 0.15625f, 3.5f, -1024f, float.PositiveInfinity };
            CollectionAssert.AreEqual(exact, DeconvLibrary.Bf16ToF32(DeconvLibrary.F32ToBf16(exact)));
            var words = DeconvLibrary.F32ToBf16(new float[] {
                1f, BitConverter.ToSingle(BitConverter.GetBytes(0x3F808000u), 0),
                BitConverter.ToSingle(BitConverter.GetBytes(0x3F818000u), 0), float.NaN });
            Assert.AreEqual(0x3F80, words[0]);
            Assert.AreEqual(0x3F80, words[1], "tie rounds to even (down)");
            Assert.AreEqual(0x3F82, words[2], "tie rounds to even (up)");
            Assert.IsTrue(float.IsNaN(DeconvLibrary.Bf16ToF32(new[] { words[3] })[0]), "NaN stays NaN");
            var into = new ushort[8];
            DeconvLibrary.F32ToBf16(exact, into);
            Assert.AreEqual(0x3F80, into[1]);
            DeconvLibrary.F32ToBf16(new float[0], new ushort[0]); // nothing to do, no error
        }

        [Test]
        public void Bf16ForwardMatchesReference()
        {
            var p = Problems.Grouped(Mode.Inference, DType.BF16);
            Assert.IsTrue(DeconvLibrary.Bf16Supported, "bf16 runs on every CPU");
            // The reference uses the bf16-rounded inputs; the output is rounded to bf16 once
            // (relative 2^-9) after an f32 accumulation: 1e-2 relative covers both.
            var s = DeconvLibrary.F32ToBf16(src);
            var w = DeconvLibrary.F32ToBf16(weights);
            var b = DeconvLibrary.F32ToBf16(bias);
            var expected = reference.Forward(DeconvLibrary.Bf16ToF32(s), DeconvLibrary.Bf16ToF32(w),
                                             DeconvLibrary.Bf16ToF32(b));
            using (var d = new Deconvolution(p))
            {
                var dst = new ushort[720];
                d.Forward(s, w, b, dst);
                Problems.AssertClose(expected, DeconvLibrary.Bf16ToF32(dst), 1e-2, "dst (bf16)");
                d.SetWeights(w, b);
                var dst2 = new ushort[720];
                d.Forward(s, dst2);
                CollectionAssert.AreEqual(dst, dst2);
            }
        }

        [Test]
        public void ConcurrentForwardOnOneHandle()
        {
            var expected = reference.Forward(src, weights, bias);
            using (var d = new Deconvolution(Problems.Grouped(Mode.Inference)))
            {
                d.SetWeights(weights, bias);
                var errors = new Exception[4];
                var threads = new Thread[4];
                for (int t = 0; t < threads.Length; t++)
                {
                    int id = t;
                    threads[t] = new Thread(() =>
                    {
                        try
                        {
                            var dst = new float[720];
                            for (int i = 0; i < 50; i++)
                            {
                                d.Forward(src, dst);
                                Problems.AssertClose(expected, dst, Problems.F32Tolerance, "dst");
                            }
                        }
                        catch (Exception e) { errors[id] = e; }
                    });
                    threads[t].Start();
                }
                foreach (var t in threads) t.Join();
                foreach (var e in errors) Assert.IsNull(e, e == null ? "" : e.ToString());
            }
        }

        [Test]
        public void LibraryInformationAndCache()
        {
            Assert.AreEqual(100u, DeconvLibrary.Version);
            Assert.AreEqual("DECONV_INVALID_ARGUMENT", DeconvLibrary.StatusString(Status.InvalidArgument));
            long old = DeconvLibrary.CacheCapacity;
            try
            {
                DeconvLibrary.CacheCapacity = 7;
                Assert.AreEqual(7, DeconvLibrary.CacheCapacity);
                DeconvLibrary.ClearCache();
                var s0 = DeconvLibrary.GetCacheStats();
                Assert.AreEqual(0ul, s0.Hits);
                Assert.AreEqual(0ul, s0.Misses);
                using (new Deconvolution(prm)) { }
                using (new Deconvolution(prm)) { }
                var s1 = DeconvLibrary.GetCacheStats();
                Assert.That(s1.Hits, Is.GreaterThan(0ul));
                Assert.That(s1.Entries, Is.GreaterThan(0ul));
            }
            finally
            {
                DeconvLibrary.CacheCapacity = old;
            }
        }
    }
}
