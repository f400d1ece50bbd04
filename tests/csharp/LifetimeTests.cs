using System;
using System.Threading;
using NUnit.Framework;

namespace Deconv.Tests
{
    [TestFixture]
    public class LifetimeTests
    {
        [Test]
        public void DisposeTwiceIsHarmless()
        {
            var d = new Deconvolution(Problems.Grouped());
            Assert.IsFalse(d.IsDisposed);
            d.Dispose();
            d.Dispose();
            Assert.IsTrue(d.IsDisposed);
        }

        [Test]
        public void UseAfterDisposeRaises()
        {
            var d = new Deconvolution(Problems.Grouped());
            d.Dispose();
            var dst = new float[720];
            const string Disposed = "handle: this Deconvolution has been disposed";
            Problems.Throws(() => d.Forward(new float[160], new float[72], new float[6], dst),
                            Status.InvalidArgument, Disposed);
            Problems.Throws(() => d.SetWeights(new float[72], new float[6]), Status.InvalidArgument, Disposed);
            Problems.Throws(() => d.Backward(null, null, new float[720], null, Req.Null, null, Req.Null,
                                             new float[6], Req.Write),
                            Status.InvalidArgument, Disposed);
            Problems.Throws(() => d.ImplName(Pass.Forward), Status.InvalidArgument, Disposed);
            Assert.AreEqual(720, d.DstSize); // managed facts stay readable
        }

        [Test]
        public void DisposeWhileOtherThreadsCompute()
        {
            // Calls in flight finish, later ones raise the disposed error; nothing crashes.
            var src = Problems.Random(160, 1);
            var d = new Deconvolution(Problems.Grouped(Mode.Inference));
            d.SetWeights(Problems.Random(72, 2), Problems.Random(6, 3));
            var unexpected = new Exception[3];
            int calls = 0;
            var threads = new Thread[3];
            for (int t = 0; t < threads.Length; t++)
            {
                int id = t;
                threads[t] = new Thread(() =>
                {
                    var dst = new float[720];
                    try
                    {
                        for (;;)
                        {
                            d.Forward(src, dst);
                            Interlocked.Increment(ref calls);
                        }
                    }
                    catch (DeconvException e) when (e.Message.Contains("disposed")) { }
                    catch (Exception e) { unexpected[id] = e; }
                });
                threads[t].Start();
            }
            while (Volatile.Read(ref calls) < 30) Thread.Sleep(1);
            d.Dispose();
            foreach (var t in threads) Assert.IsTrue(t.Join(10000), "a thread did not stop");
            foreach (var e in unexpected) Assert.IsNull(e, e == null ? "" : e.ToString());
        }

        [Test]
        public void ForgottenHandlesAreFinalized()
        {
            for (int i = 0; i < 20; i++) new Deconvolution(Problems.Grouped());
            GC.Collect();
            GC.WaitForPendingFinalizers(); // SafeHandle's finalizer calls deconv_destroy
            using (var d = new Deconvolution(Problems.Grouped())) Assert.IsFalse(d.IsDisposed);
        }
    }
}
