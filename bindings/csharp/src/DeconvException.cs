using System;

namespace Deconv
{
    /// <summary>
    /// Every failure of the binding: a check the binding makes before calling the library
    /// (buffer lengths, dtype, a disposed handle; <see cref="Status.InvalidArgument"/>), an error
    /// of the library (its status and deconv_last_error()), or a native library that cannot be
    /// loaded (<see cref="Status.Unsupported"/>, the message lists where it was looked for).
    /// </summary>
    public class DeconvException : Exception
    {
        /// <summary>The C API status of the failure.</summary>
        public Status Status { get; }

        /// <summary>A failure with the given status and message.</summary>
        public DeconvException(Status status, string message) : base(message)
        {
            Status = status;
        }

        /// <summary>A failure caused by another exception (e.g. the runtime's load error).</summary>
        public DeconvException(Status status, string message, Exception inner) : base(message, inner)
        {
            Status = status;
        }

        /// <summary>The exception for a native status returned by the library: its message is
        /// deconv_last_error() of this thread, read right after the failing call.</summary>
        internal static DeconvException FromNative(deconv_status status)
        {
            return new DeconvException((Status)(int)status, DeconvNative.deconv_last_error());
        }

        internal static void Check(deconv_status status)
        {
            if (status != deconv_status.DECONV_OK) throw FromNative(status);
        }

        internal static DeconvException Invalid(string message)
        {
            return new DeconvException(Status.InvalidArgument, message);
        }
    }
}
