using System;
using System.Linq;
using System.Reflection;
using NUnit.Framework;

namespace Deconv.Tests
{
    /// <summary>DeconvParams is a value: copies, and arrays passed in or read out, are independent
    /// of it (as Java's copy() and array accessors).</summary>
    [TestFixture]
    public class ParamsTests
    {
        private static void AssertGrouped(DeconvParams p)
        {
            CollectionAssert.AreEqual(new long[] { 5, 4 }, p.InSize);
            CollectionAssert.AreEqual(new long[] { 3, 2 }, p.Kernel);
            CollectionAssert.AreEqual(new long[] { 2, 1 }, p.Stride);
            CollectionAssert.AreEqual(new long[] { 1, 0 }, p.Pad);
            CollectionAssert.AreEqual(new long[] { 1, 2 }, p.Dilate);
            CollectionAssert.AreEqual(new long[] { 1, 0 }, p.Adj);
            CollectionAssert.AreEqual(new long[] { 0, 0 }, p.TargetShape);
            Assert.AreEqual(6, p.OutChannels);
        }

        [Test]
        public void CloneIsDeep()
        {
            var original = Problems.Grouped();
            var clone = original.Clone();
            AssertGrouped(clone);
            clone.InSize = new long[] { 9, 9 };
            clone.Kernel = new long[] { 1, 1 };
            clone.Stride = new long[] { 3, 3 };
            clone.Pad = new long[] { 0, 1 };
            clone.Dilate = new long[] { 2, 1 };
            clone.Adj = new long[] { 0, 0 };
            clone.TargetShape = new long[] { 20, 20 };
            clone.OutChannels = 8;
            AssertGrouped(original);

            // And the other way round; the clone also keeps the count of values each array was given.
            clone = original.Clone();
            original.InSize = new long[] { 7 };
            original.Kernel = new long[] { 1, 1 };
            CollectionAssert.AreEqual(new long[] { 5, 4 }, clone.InSize);
            CollectionAssert.AreEqual(new long[] { 3, 2 }, clone.Kernel);
            CollectionAssert.AreEqual(new long[] { 10, 6 }, clone.OutputShape());
            Problems.Throws(() => original.Clone().OutputShape(), Status.InvalidArgument,
                            "in_size: 1 values given for rank = 2");
        }

        [Test]
        public void ArraysAreCopiedInAndOut()
        {
            var given = new long[] { 5, 4 };
            var p = new DeconvParams { InSize = given };
            given[0] = 99;
            CollectionAssert.AreEqual(new long[] { 5, 4 }, p.InSize);

            var read = p.InSize;
            read[1] = 99;
            CollectionAssert.AreEqual(new long[] { 5, 4 }, p.InSize);
            Assert.AreNotSame(p.Kernel, p.Kernel);
        }

        [Test]
        public void HandleKeepsItsOwnCopy()
        {
            var p = Problems.Grouped();
            using (var d = new Deconvolution(p))
            {
                p.OutChannels = 8;
                p.Kernel = new long[] { 5, 5 };
                AssertGrouped(d.Params);
                d.Params.Kernel = new long[] { 1, 1 }; // a copy, not the handle's
                AssertGrouped(d.Params);
                Assert.AreEqual(720, d.DstSize);
            }
        }

        [Test]
        public void OnlyTheHandWrittenTypesArePublic()
        {
            var assembly = typeof(Deconvolution).Assembly;
            var exported = assembly.GetExportedTypes().Select(t => t.FullName).OrderBy(n => n, StringComparer.Ordinal);
            CollectionAssert.AreEqual(new[] {
                "Deconv.CacheStats", "Deconv.DType", "Deconv.DeconvException", "Deconv.DeconvLibrary",
                "Deconv.DeconvParams", "Deconv.Deconvolution", "Deconv.Layout", "Deconv.Mode", "Deconv.Pass",
                "Deconv.Req", "Deconv.Status",
            }, exported.ToArray());
            // The assembly looked at does hold SWIG's layer.
            Assert.IsNotNull(assembly.GetType("Deconv.DeconvNative"));
        }
    }
}
