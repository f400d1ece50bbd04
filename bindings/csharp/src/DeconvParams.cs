using System;

namespace Deconv
{
    /// <summary>
    /// A deconvolution problem (the C struct deconv_params), built with an object initializer:
    /// <code>new DeconvParams { Rank = 2, InChannels = 3, OutChannels = 8, InSize = new long[] { 32, 32 },
    ///     Kernel = new long[] { 3, 3 }, Stride = new long[] { 2, 2 } }</code>
    /// A new instance holds the defaults of the loaded library's deconv_params_init (rank 2,
    /// batch 1, channels 1, groups 1, in_size/kernel/stride/dilate 1, pad/adj/target_shape 0,
    /// bias on, F32, ChannelsFirst, Inference). Values are only validated by the library, when a
    /// <see cref="Deconvolution"/> is created or <see cref="OutputShape"/> is called.
    /// Spatial arrays are outermost first (w; h, w; d, h, w) and take 1 to 3 values; as many as
    /// <see cref="Rank"/> must be given (checked when the problem is used, so that the
    /// properties can be set in any order). The arrays are copied in and out: changing an array
    /// passed to or read from a property does not change the parameters.
    /// </summary>
    public sealed class DeconvParams
    {
        private const int MaxRank = 3;
        private static readonly string[] ArrayNames =
            { "in_size", "kernel", "stride", "pad", "dilate", "adj", "target_shape" };
        private const int InSizeI = 0, KernelI = 1, StrideI = 2, PadI = 3, DilateI = 4, AdjI = 5,
            TargetShapeI = 6;

        private readonly long[][] arrays = new long[ArrayNames.Length][];
        // How many values each spatial property was given (-1: never set), checked against Rank.
        private readonly int[] given = { -1, -1, -1, -1, -1, -1, -1 };

        /// <summary>Number of spatial dimensions: 1, 2 or 3.</summary>
        public int Rank { get; set; }
        /// <summary>Batch size N.</summary>
        public long Batch { get; set; }
        /// <summary>Input channels.</summary>
        public long InChannels { get; set; }
        /// <summary>Output channels (MXNet num_filter).</summary>
        public long OutChannels { get; set; }
        /// <summary>Groups (MXNet num_group); divides both channel counts.</summary>
        public long Groups { get; set; }
        /// <summary>True: the problem has no bias.</summary>
        public bool NoBias { get; set; }
        /// <summary>Element type of all buffers.</summary>
        public DType DType { get; set; }
        /// <summary>Layout of src, dst and their gradients.</summary>
        public Layout Layout { get; set; }
        /// <summary>Inference (forward only) or Training (forward and backward).</summary>
        public Mode Mode { get; set; }

        /// <summary>Input spatial size.</summary>
        public long[] InSize { get => Get(InSizeI); set => Set(InSizeI, value); }
        /// <summary>Kernel size.</summary>
        public long[] Kernel { get => Get(KernelI); set => Set(KernelI, value); }
        /// <summary>Stride.</summary>
        public long[] Stride { get => Get(StrideI); set => Set(StrideI, value); }
        /// <summary>Padding removed from both ends of the output.</summary>
        public long[] Pad { get => Get(PadI); set => Set(PadI, value); }
        /// <summary>Dilation, 1-based (1 = none).</summary>
        public long[] Dilate { get => Get(DilateI); set => Set(DilateI, value); }
        /// <summary>Extra output at the high end, less than the stride.</summary>
        public long[] Adj { get => Get(AdjI); set => Set(AdjI, value); }
        /// <summary>Requested output size (all zero: unused); pad and adj are then derived as
        /// MXNet's InferPad does.</summary>
        public long[] TargetShape { get => Get(TargetShapeI); set => Set(TargetShapeI, value); }

        /// <summary>The library's defaults (deconv_params_init).</summary>
        /// <exception cref="DeconvException">The native library cannot be loaded.</exception>
        public DeconvParams()
        {
            NativeLoader.Ensure();
            using (var p = NewNative())
            {
                Rank = p.rank;
                Batch = p.batch;
                InChannels = p.in_channels;
                OutChannels = p.out_channels;
                Groups = p.groups;
                NoBias = p.no_bias != 0;
                DType = (DType)(int)p.dtype;
                Layout = (Layout)(int)p.layout;
                Mode = (Mode)(int)p.mode;
                for (int a = 0; a < ArrayNames.Length; a++)
                {
                    arrays[a] = new long[MaxRank];
                    for (int i = 0; i < MaxRank; i++) arrays[a][i] = NativeGet(p, a, i);
                }
            }
        }

        // Not MemberwiseClone: that would share the readonly arrays with the original.
        private DeconvParams(DeconvParams other)
        {
            Rank = other.Rank;
            Batch = other.Batch;
            InChannels = other.InChannels;
            OutChannels = other.OutChannels;
            Groups = other.Groups;
            NoBias = other.NoBias;
            DType = other.DType;
            Layout = other.Layout;
            Mode = other.Mode;
            for (int a = 0; a < ArrayNames.Length; a++) arrays[a] = (long[])other.arrays[a].Clone();
            Array.Copy(other.given, given, given.Length);
        }

        /// <summary>An independent (deep) copy: changing either one leaves the other as it was.</summary>
        public DeconvParams Clone()
        {
            return new DeconvParams(this);
        }

        /// <summary>The output spatial size (first Rank entries) this problem produces.</summary>
        /// <exception cref="DeconvException">The problem is invalid (message from the library).</exception>
        public long[] OutputShape()
        {
            using (var p = ToNative())
            {
                var shape = new long[ClampedRank];
                for (int i = 0; i < shape.Length; i++)
                {
                    long v;
                    DeconvException.Check(DeconvNative.deconv_output_size_at(p, i, out v));
                    shape[i] = v;
                }
                return shape;
            }
        }

        private int ClampedRank => Rank >= 1 && Rank <= MaxRank ? Rank : MaxRank;

        private long[] Get(int a)
        {
            var r = new long[ClampedRank];
            Array.Copy(arrays[a], r, r.Length);
            return r;
        }

        private void Set(int a, long[] values)
        {
            if (values == null)
                throw DeconvException.Invalid(string.Format("{0}: null, but 1 to {1} values are expected",
                    ArrayNames[a], MaxRank));
            if (values.Length < 1 || values.Length > MaxRank)
                throw DeconvException.Invalid(string.Format("{0}: {1} values given, 1 to {2} expected",
                    ArrayNames[a], values.Length, MaxRank));
            Array.Copy(values, arrays[a], values.Length);
            given[a] = values.Length;
        }

        /// <summary>A native deconv_params holding these values; the caller disposes it. The
        /// library checks the values; the binding only checks what the C struct cannot express:
        /// spatial values given for another rank (the C struct would read defaults or leftovers
        /// for the missing ones).</summary>
        internal deconv_params ToNative()
        {
            // An invalid rank is left to the library, whose message names it.
            if (Rank >= 1 && Rank <= MaxRank)
                for (int a = 0; a < ArrayNames.Length; a++)
                    if (given[a] != -1 && given[a] != Rank)
                        throw DeconvException.Invalid(string.Format("{0}: {1} values given for rank = {2}",
                            ArrayNames[a], given[a], Rank));
            var p = NewNative();
            try
            {
                p.rank = Rank;
                p.batch = Batch;
                p.in_channels = InChannels;
                p.out_channels = OutChannels;
                p.groups = Groups;
                p.no_bias = NoBias ? 1 : 0;
                p.dtype = (deconv_dtype)(int)DType;
                p.layout = (deconv_layout)(int)Layout;
                p.mode = (deconv_mode)(int)Mode;
                for (int a = 0; a < ArrayNames.Length; a++)
                    for (int i = 0; i < MaxRank; i++) NativeSet(p, a, i, arrays[a][i]);
                return p;
            }
            catch
            {
                p.Dispose();
                throw;
            }
        }

        private static deconv_params NewNative()
        {
            var p = new deconv_params();
            if (deconv_params.getCPtr(p).Handle == IntPtr.Zero)
                throw new DeconvException(Status.OutOfMemory, "params: out of memory");
            return p;
        }

        private static long NativeGet(deconv_params p, int a, int i)
        {
            switch (a)
            {
                case InSizeI: return p.get_in_size(i);
                case KernelI: return p.get_kernel(i);
                case StrideI: return p.get_stride(i);
                case PadI: return p.get_pad(i);
                case DilateI: return p.get_dilate(i);
                case AdjI: return p.get_adj(i);
                default: return p.get_target_shape(i);
            }
        }

        private static void NativeSet(deconv_params p, int a, int i, long v)
        {
            switch (a)
            {
                case InSizeI: p.set_in_size(i, v); break;
                case KernelI: p.set_kernel(i, v); break;
                case StrideI: p.set_stride(i, v); break;
                case PadI: p.set_pad(i, v); break;
                case DilateI: p.set_dilate(i, v); break;
                case AdjI: p.set_adj(i, v); break;
                default: p.set_target_shape(i, v); break;
            }
        }
    }
}
