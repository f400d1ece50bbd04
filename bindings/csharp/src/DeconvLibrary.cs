using System;

namespace Deconv
{
    /// <summary>Counters of the process-wide primitive cache.</summary>
    public struct CacheStats
    {
        /// <summary>Lookups that found a primitive.</summary>
        public ulong Hits;
        /// <summary>Lookups that had to create one.</summary>
        public ulong Misses;
        /// <summary>Primitives held now.</summary>
        public ulong Entries;
    }

    /// <summary>What is not tied to a handle: version, bf16 support and conversion, the primitive
    /// cache. Every member raises DeconvException when the native library cannot be loaded.</summary>
    public static unsafe class DeconvLibrary
    {
        /// <summary>The loaded library's version, MAJOR * 10000 + MINOR * 100 + PATCH.</summary>
        public static uint Version
        {
            get { NativeLoader.Ensure(); return DeconvNative.deconv_version(); }
        }

        /// <summary>True: every CPU runs bf16 problems (in f32 on converted copies where oneDNN has no bf16 kernels).</summary>
        public static bool Bf16Supported
        {
            get { NativeLoader.Ensure(); return DeconvNative.deconv_bf16_supported() != 0; }
        }

        /// <summary>"DECONV_OK", "DECONV_INVALID_ARGUMENT", ...</summary>
        public static string StatusString(Status status)
        {
            NativeLoader.Ensure();
            return DeconvNative.deconv_status_string((deconv_status)(int)status);
        }

        /// <summary>Converts all of src to bf16 words in dst (round to nearest even).</summary>
        public static void F32ToBf16(float[] src, ushort[] dst)
        {
            if (!CheckPair(src, dst)) return;
            fixed (float* s = src) fixed (ushort* d = dst) F32ToBf16(s, d, src.LongLength);
        }

        /// <summary>src as bf16 words, in a new array.</summary>
        public static ushort[] F32ToBf16(float[] src)
        {
            if (src == null) throw DeconvException.Invalid("src: null, but it holds the floats to convert");
            var dst = new ushort[src.LongLength];
            F32ToBf16(src, dst);
            return dst;
        }

        /// <summary>Converts count elements from src to dst.</summary>
        public static void F32ToBf16(float* src, ushort* dst, long count)
        {
            if (count < 0) throw DeconvException.Invalid("count: " + count);
            NativeLoader.Ensure();
            DeconvException.Check(DeconvNative.deconv_f32_to_bf16((IntPtr)src, (IntPtr)dst, (ulong)count));
        }

        /// <summary>Converts all of src (bf16 words) to floats in dst.</summary>
        public static void Bf16ToF32(ushort[] src, float[] dst)
        {
            if (!CheckPair(src, dst)) return;
            fixed (ushort* s = src) fixed (float* d = dst) Bf16ToF32(s, d, src.LongLength);
        }

        /// <summary>src as floats, in a new array.</summary>
        public static float[] Bf16ToF32(ushort[] src)
        {
            if (src == null) throw DeconvException.Invalid("src: null, but it holds the bf16 words to convert");
            var dst = new float[src.LongLength];
            Bf16ToF32(src, dst);
            return dst;
        }

        /// <summary>Converts count elements from src to dst.</summary>
        public static void Bf16ToF32(ushort* src, float* dst, long count)
        {
            if (count < 0) throw DeconvException.Invalid("count: " + count);
            NativeLoader.Ensure();
            DeconvException.Check(DeconvNative.deconv_bf16_to_f32((IntPtr)src, (IntPtr)dst, (ulong)count));
        }

        /// <summary>Capacity of the primitive cache in entries (0 disables it; shrinking evicts
        /// at once).</summary>
        public static long CacheCapacity
        {
            get
            {
                NativeLoader.Ensure();
                return (long)DeconvNative.deconv_cache_capacity();
            }
            set
            {
                if (value < 0) throw DeconvException.Invalid("capacity: " + value);
                NativeLoader.Ensure();
                DeconvException.Check(DeconvNative.deconv_cache_set_capacity((ulong)value));
            }
        }

        /// <summary>The cache's hit and miss counters and its entry count.</summary>
        public static CacheStats GetCacheStats()
        {
            NativeLoader.Ensure();
            var s = new CacheStats();
            DeconvException.Check(DeconvNative.deconv_cache_stats(out s.Hits, out s.Misses, out s.Entries));
            return s;
        }

        /// <summary>Drops every cached primitive and zeroes the counters.</summary>
        public static void ClearCache()
        {
            NativeLoader.Ensure();
            DeconvException.Check(DeconvNative.deconv_cache_clear());
        }

        // False for an empty src: nothing to convert, and an empty array pins to a null pointer,
        // which the library would reject.
        private static bool CheckPair(Array src, Array dst)
        {
            if (src == null) throw DeconvException.Invalid("src: null, but it holds the values to convert");
            if (dst == null)
                throw DeconvException.Invalid("dst: null, but the conversion needs somewhere to write");
            if (dst.LongLength < src.LongLength)
                throw DeconvException.Invalid(string.Format("dst: {0} elements, src has {1}",
                                                            dst.LongLength, src.LongLength));
            return src.LongLength > 0;
        }
    }
}
