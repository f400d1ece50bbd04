using System;
using System.Threading;

namespace Deconv
{
    /// <summary>
    /// A deconvolution handle (the C deconv *) for one <see cref="DeconvParams"/> problem.
    /// <para>Buffers are dense, in the problem's layout: <c>float[]</c> / <c>float*</c> for
    /// <see cref="DType.F32"/>, <c>ushort[]</c> / <c>ushort*</c> (raw bf16 words) for
    /// <see cref="DType.BF16"/>. Arrays are pinned for the call, never copied: the library writes
    /// the output arrays in place. A buffer must hold at least the element count the problem
    /// needs (<see cref="SrcSize"/>, <see cref="WeightsSize"/>, <see cref="BiasSize"/>,
    /// <see cref="DstSize"/>; the gradients have the size of what they are the gradient of); only
    /// that many elements are used. Null stands for the C API's NULL (e.g. no bias, weights
    /// kept by <see cref="SetWeights(float[], float[])"/>, an output whose req is Null).</para>
    /// <para>Thread safety: Forward, Backward and ImplName may run on one handle from several
    /// threads at once. SetWeights waits for the calls in flight on the handle and holds the
    /// others back until it is done (the C API leaves that to the caller). Dispose may be called
    /// from any thread at any time: calls already running finish first, deconv_destroy runs after
    /// the last one, and calls that start later raise DeconvException.</para>
    /// </summary>
    public sealed unsafe class Deconvolution : IDisposable
    {
        private readonly DeconvHandle handle;
        private readonly DeconvParams parameters;
        private readonly long[] outputShape;
        // Readers: forward and backward; writer: SetWeights (it replaces the packed weights).
        // Never disposed: a call racing with Dispose may still hold it, and it owns no native
        // resource.
        private readonly ReaderWriterLockSlim weightsLock = new ReaderWriterLockSlim();
        // Our own flag, because Mono's SafeHandle.Dispose does not close a handle that has
        // references outstanding: with calls overlapping on several threads it would never
        // close, and new calls would keep being admitted.
        private volatile bool disposed;

        /// <summary>Creates the native handle (deconv_create).</summary>
        /// <exception cref="DeconvException">Invalid or unsupported problem (message from the
        /// library, naming the field), or the native library cannot be loaded.</exception>
        public Deconvolution(DeconvParams parameters)
        {
            if (parameters == null) throw DeconvException.Invalid("params: null, but a Deconvolution needs the problem to create");
            NativeLoader.Ensure();
            this.parameters = parameters.Clone();
            using (var p = this.parameters.ToNative())
            {
                int status;
                IntPtr h = DeconvNative.deconv_create_handle(p, out status);
                if (status != 0) throw DeconvException.FromNative((deconv_status)status);
                handle = new DeconvHandle(h);
                try
                {
                    using (var sizes = new deconv_sizes())
                    {
                        DeconvException.Check(DeconvNative.deconv_buffer_sizes(p, sizes));
                        SrcSize = sizes.src;
                        WeightsSize = sizes.weights;
                        BiasSize = sizes.bias;
                        DstSize = sizes.dst;
                    }
                    outputShape = this.parameters.OutputShape();
                }
                catch
                {
                    handle.Dispose();
                    throw;
                }
            }
        }

        /// <summary>Elements of src (and diff_src).</summary>
        public long SrcSize { get; }
        /// <summary>Elements of weights (and diff_weights).</summary>
        public long WeightsSize { get; }
        /// <summary>Elements of bias (and diff_bias); 0 when the problem has no bias.</summary>
        public long BiasSize { get; }
        /// <summary>Elements of dst (and diff_dst).</summary>
        public long DstSize { get; }
        /// <summary>Output spatial size, outermost first.</summary>
        public long[] OutputShape => (long[])outputShape.Clone();
        /// <summary>A copy of the problem this handle was created for.</summary>
        public DeconvParams Params => parameters.Clone();
        /// <summary>Element type of the buffers this handle takes.</summary>
        public DType DType => parameters.DType;
        /// <summary>True once Dispose has been called.</summary>
        public bool IsDisposed => disposed;

        /// <summary>Frees the native handle (after calls in flight return). Calling it again does
        /// nothing.</summary>
        public void Dispose()
        {
            disposed = true;
            handle.Dispose();
        }

        /// <summary>The oneDNN implementation of a pass, e.g. "jit:avx512_core on nChw16c".</summary>
        /// <exception cref="DeconvException">A pass the handle lacks (backward of an inference
        /// handle), or a disposed handle.</exception>
        public string ImplName(Pass pass)
        {
            IntPtr h = Acquire();
            try
            {
                string name = DeconvNative.deconv_impl_name(h, (deconv_pass)(int)pass);
                if (name == null)
                    throw new DeconvException(Status.InvalidArgument, DeconvNative.deconv_last_error());
                return name;
            }
            finally
            {
                handle.DangerousRelease();
            }
        }

        // ---- SetWeights: keep weights (and bias) in the handle, packed once ----

        /// <summary>Keeps weights and bias (null when the problem has no bias) in the handle;
        /// Forward without weights then uses them. The arrays are not referenced afterwards.</summary>
        public void SetWeights(float[] weights, float[] bias)
        {
            RequireDType(DType.F32);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("bias", bias, BiasSize);
            fixed (float* w = weights, b = bias) SetWeightsRaw((IntPtr)w, (IntPtr)b);
        }

        /// <summary>bf16 version of <see cref="SetWeights(float[], float[])"/>.</summary>
        public void SetWeights(ushort[] weights, ushort[] bias)
        {
            RequireDType(DType.BF16);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("bias", bias, BiasSize);
            fixed (ushort* w = weights, b = bias) SetWeightsRaw((IntPtr)w, (IntPtr)b);
        }

        /// <summary>Pointer version of <see cref="SetWeights(float[], float[])"/>; each length is
        /// the number of elements the caller's memory holds (ignored for a null pointer).</summary>
        public void SetWeights(float* weights, long weightsLength, float* bias, long biasLength)
        {
            RequireDType(DType.F32);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("bias", bias, biasLength, BiasSize);
            SetWeightsRaw((IntPtr)weights, (IntPtr)bias);
        }

        /// <summary>bf16 pointer version of <see cref="SetWeights(float[], float[])"/>.</summary>
        public void SetWeights(ushort* weights, long weightsLength, ushort* bias, long biasLength)
        {
            RequireDType(DType.BF16);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("bias", bias, biasLength, BiasSize);
            SetWeightsRaw((IntPtr)weights, (IntPtr)bias);
        }

        // ---- Forward: dst (req) = deconvolution(src, weights) + bias ----

        /// <summary>dst (req) = deconvolution(src, weights) + bias. Weights null: the ones of
        /// SetWeights (bias must then be null too). Bias null only when the problem has no bias.</summary>
        public void Forward(float[] src, float[] weights, float[] bias, float[] dst, Req req = Req.Write)
        {
            RequireDType(DType.F32);
            CheckArray("src", src, SrcSize);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("bias", bias, BiasSize);
            CheckArray("dst", dst, DstSize);
            fixed (float* s = src, w = weights, b = bias, d = dst)
                ForwardRaw((IntPtr)s, (IntPtr)w, (IntPtr)b, (IntPtr)d, req);
        }

        /// <summary>Forward with the weights kept by SetWeights.</summary>
        public void Forward(float[] src, float[] dst, Req req = Req.Write)
        {
            Forward(src, null, null, dst, req);
        }

        /// <summary>bf16 version of <see cref="Forward(float[], float[], float[], float[], Req)"/>.</summary>
        public void Forward(ushort[] src, ushort[] weights, ushort[] bias, ushort[] dst, Req req = Req.Write)
        {
            RequireDType(DType.BF16);
            CheckArray("src", src, SrcSize);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("bias", bias, BiasSize);
            CheckArray("dst", dst, DstSize);
            fixed (ushort* s = src, w = weights, b = bias, d = dst)
                ForwardRaw((IntPtr)s, (IntPtr)w, (IntPtr)b, (IntPtr)d, req);
        }

        /// <summary>bf16 forward with the weights kept by SetWeights.</summary>
        public void Forward(ushort[] src, ushort[] dst, Req req = Req.Write)
        {
            Forward(src, null, null, dst, req);
        }

        /// <summary>Pointer version of <see cref="Forward(float[], float[], float[], float[], Req)"/>;
        /// each length is the number of elements the caller's memory holds (ignored for null).</summary>
        public void Forward(float* src, long srcLength, float* weights, long weightsLength,
                            float* bias, long biasLength, float* dst, long dstLength, Req req = Req.Write)
        {
            RequireDType(DType.F32);
            CheckPointer("src", src, srcLength, SrcSize);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("bias", bias, biasLength, BiasSize);
            CheckPointer("dst", dst, dstLength, DstSize);
            ForwardRaw((IntPtr)src, (IntPtr)weights, (IntPtr)bias, (IntPtr)dst, req);
        }

        /// <summary>bf16 pointer version of <see cref="Forward(float[], float[], float[], float[], Req)"/>.</summary>
        public void Forward(ushort* src, long srcLength, ushort* weights, long weightsLength,
                            ushort* bias, long biasLength, ushort* dst, long dstLength, Req req = Req.Write)
        {
            RequireDType(DType.BF16);
            CheckPointer("src", src, srcLength, SrcSize);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("bias", bias, biasLength, BiasSize);
            CheckPointer("dst", dst, dstLength, DstSize);
            ForwardRaw((IntPtr)src, (IntPtr)weights, (IntPtr)bias, (IntPtr)dst, req);
        }

        // ---- Backward (training handles): gradients given diff_dst ----

        /// <summary>Gradients of the forward pass given diffDst: diffSrc (reqSrc) needs weights,
        /// diffWeights (reqWeights) needs src, diffBias (reqBias; Req.Null when the problem has no
        /// bias). An output whose req is Req.Null is not written and may be null, as may an input
        /// no requested output needs.</summary>
        public void Backward(float[] src, float[] weights, float[] diffDst,
                             float[] diffSrc, Req reqSrc, float[] diffWeights, Req reqWeights,
                             float[] diffBias, Req reqBias)
        {
            RequireDType(DType.F32);
            CheckArray("src", src, SrcSize);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("diff_dst", diffDst, DstSize);
            CheckArray("diff_src", diffSrc, SrcSize);
            CheckArray("diff_weights", diffWeights, WeightsSize);
            CheckArray("diff_bias", diffBias, BiasSize);
            fixed (float* s = src, w = weights, dd = diffDst, ds = diffSrc, dw = diffWeights, db = diffBias)
                BackwardRaw((IntPtr)s, (IntPtr)w, (IntPtr)dd, (IntPtr)ds, reqSrc, (IntPtr)dw, reqWeights,
                            (IntPtr)db, reqBias);
        }

        /// <summary>bf16 version of <see cref="Backward(float[], float[], float[], float[], Req, float[], Req, float[], Req)"/>.</summary>
        public void Backward(ushort[] src, ushort[] weights, ushort[] diffDst,
                             ushort[] diffSrc, Req reqSrc, ushort[] diffWeights, Req reqWeights,
                             ushort[] diffBias, Req reqBias)
        {
            RequireDType(DType.BF16);
            CheckArray("src", src, SrcSize);
            CheckArray("weights", weights, WeightsSize);
            CheckArray("diff_dst", diffDst, DstSize);
            CheckArray("diff_src", diffSrc, SrcSize);
            CheckArray("diff_weights", diffWeights, WeightsSize);
            CheckArray("diff_bias", diffBias, BiasSize);
            fixed (ushort* s = src, w = weights, dd = diffDst, ds = diffSrc, dw = diffWeights, db = diffBias)
                BackwardRaw((IntPtr)s, (IntPtr)w, (IntPtr)dd, (IntPtr)ds, reqSrc, (IntPtr)dw, reqWeights,
                            (IntPtr)db, reqBias);
        }

        /// <summary>Pointer version of <see cref="Backward(float[], float[], float[], float[], Req, float[], Req, float[], Req)"/>;
        /// each length is the number of elements the caller's memory holds (ignored for null).</summary>
        public void Backward(float* src, long srcLength, float* weights, long weightsLength,
                             float* diffDst, long diffDstLength,
                             float* diffSrc, long diffSrcLength, Req reqSrc,
                             float* diffWeights, long diffWeightsLength, Req reqWeights,
                             float* diffBias, long diffBiasLength, Req reqBias)
        {
            RequireDType(DType.F32);
            CheckPointer("src", src, srcLength, SrcSize);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("diff_dst", diffDst, diffDstLength, DstSize);
            CheckPointer("diff_src", diffSrc, diffSrcLength, SrcSize);
            CheckPointer("diff_weights", diffWeights, diffWeightsLength, WeightsSize);
            CheckPointer("diff_bias", diffBias, diffBiasLength, BiasSize);
            BackwardRaw((IntPtr)src, (IntPtr)weights, (IntPtr)diffDst, (IntPtr)diffSrc, reqSrc,
                        (IntPtr)diffWeights, reqWeights, (IntPtr)diffBias, reqBias);
        }

        /// <summary>bf16 pointer version of <see cref="Backward(float[], float[], float[], float[], Req, float[], Req, float[], Req)"/>.</summary>
        public void Backward(ushort* src, long srcLength, ushort* weights, long weightsLength,
                             ushort* diffDst, long diffDstLength,
                             ushort* diffSrc, long diffSrcLength, Req reqSrc,
                             ushort* diffWeights, long diffWeightsLength, Req reqWeights,
                             ushort* diffBias, long diffBiasLength, Req reqBias)
        {
            RequireDType(DType.BF16);
            CheckPointer("src", src, srcLength, SrcSize);
            CheckPointer("weights", weights, weightsLength, WeightsSize);
            CheckPointer("diff_dst", diffDst, diffDstLength, DstSize);
            CheckPointer("diff_src", diffSrc, diffSrcLength, SrcSize);
            CheckPointer("diff_weights", diffWeights, diffWeightsLength, WeightsSize);
            CheckPointer("diff_bias", diffBias, diffBiasLength, BiasSize);
            BackwardRaw((IntPtr)src, (IntPtr)weights, (IntPtr)diffDst, (IntPtr)diffSrc, reqSrc,
                        (IntPtr)diffWeights, reqWeights, (IntPtr)diffBias, reqBias);
        }

        // ---- the native calls, with the handle kept alive and the weights lock held ----

        private void SetWeightsRaw(IntPtr weights, IntPtr bias)
        {
            IntPtr h = Acquire();
            weightsLock.EnterWriteLock();
            try
            {
                DeconvException.Check(DeconvNative.deconv_set_weights(h, weights, bias));
            }
            finally
            {
                weightsLock.ExitWriteLock();
                handle.DangerousRelease();
            }
        }

        private void ForwardRaw(IntPtr src, IntPtr weights, IntPtr bias, IntPtr dst, Req req)
        {
            IntPtr h = Acquire();
            weightsLock.EnterReadLock();
            try
            {
                DeconvException.Check(DeconvNative.deconv_forward(h, src, weights, bias, dst,
                                                                  (deconv_req)(int)req));
            }
            finally
            {
                weightsLock.ExitReadLock();
                handle.DangerousRelease();
            }
        }

        private void BackwardRaw(IntPtr src, IntPtr weights, IntPtr diffDst, IntPtr diffSrc, Req reqSrc,
                                 IntPtr diffWeights, Req reqWeights, IntPtr diffBias, Req reqBias)
        {
            IntPtr h = Acquire();
            weightsLock.EnterReadLock();
            try
            {
                DeconvException.Check(DeconvNative.deconv_backward(h, src, weights, diffDst,
                    diffSrc, (deconv_req)(int)reqSrc, diffWeights, (deconv_req)(int)reqWeights,
                    diffBias, (deconv_req)(int)reqBias));
            }
            finally
            {
                weightsLock.ExitReadLock();
                handle.DangerousRelease();
            }
        }

        /// <summary>The native handle with one more reference (the caller releases it), or the
        /// "disposed" error. The reference is what keeps Dispose from freeing it mid-call.</summary>
        private IntPtr Acquire()
        {
            bool added = false;
            try
            {
                handle.DangerousAddRef(ref added);
            }
            catch (ObjectDisposedException)
            {
            }
            if (added && disposed)
            {
                handle.DangerousRelease();
                added = false;
            }
            if (!added) throw Disposed();
            return handle.DangerousGetHandle();
        }

        private void RequireDType(DType wanted)
        {
            if (disposed) throw Disposed();
            if (parameters.DType != wanted)
                throw DeconvException.Invalid(string.Format(
                    "dtype: the handle is {0}; use the {1} overloads", parameters.DType,
                    parameters.DType == DType.F32 ? "float[] / float*" : "ushort[] / ushort*"));
        }

        private static DeconvException Disposed()
        {
            return DeconvException.Invalid("handle: this Deconvolution has been disposed");
        }

        internal static void CheckArray(string name, Array buffer, long needed)
        {
            if (buffer != null && buffer.LongLength < needed) throw TooShort(name, buffer.LongLength, needed);
        }

        internal static void CheckPointer(string name, void* buffer, long length, long needed)
        {
            if (buffer != null && length < needed) throw TooShort(name, length, needed);
        }

        private static DeconvException TooShort(string name, long length, long needed)
        {
            return DeconvException.Invalid(string.Format("{0}: {1} elements, the problem needs {2}",
                                                         name, length, needed));
        }
    }
}
