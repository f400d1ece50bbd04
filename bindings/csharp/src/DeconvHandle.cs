using System;
using System.Runtime.InteropServices;

namespace Deconv
{
    /// <summary>Owns one native deconv handle. SafeHandle counts the calls in flight
    /// (DangerousAddRef/Release), so deconv_destroy runs only after the last of them has
    /// returned, and its critical finalizer frees a handle nobody disposed.</summary>
    internal sealed class DeconvHandle : SafeHandle
    {
        internal DeconvHandle(IntPtr handle) : base(IntPtr.Zero, true)
        {
            SetHandle(handle);
        }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            DeconvNative.deconv_destroy(handle);
            return true;
        }
    }
}
