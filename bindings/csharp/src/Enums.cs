// The C API's enums, with the same numeric values (the binding casts them straight through).
namespace Deconv
{
    /// <summary>Outcome of a native call (deconv_status).</summary>
    public enum Status
    {
        /// <summary>DECONV_OK</summary>
        Ok = 0,
        /// <summary>DECONV_INVALID_ARGUMENT: a parameter, buffer or request is not acceptable.</summary>
        InvalidArgument = 1,
        /// <summary>DECONV_UNSUPPORTED: valid, but this build, CPU or installation cannot do it.</summary>
        Unsupported = 2,
        /// <summary>DECONV_OUT_OF_MEMORY</summary>
        OutOfMemory = 3,
        /// <summary>DECONV_INTERNAL_ERROR: a bug or an unexpected oneDNN failure.</summary>
        InternalError = 4,
    }

    /// <summary>Element type of every buffer of a problem (deconv_dtype).</summary>
    public enum DType
    {
        /// <summary>32-bit float buffers (<c>float[]</c>).</summary>
        F32 = 0,
        /// <summary>bfloat16 buffers as raw 16-bit words (<c>ushort[]</c>).</summary>
        BF16 = 1,
    }

    /// <summary>Layout of src, dst and their gradients (deconv_layout). Weights are always
    /// (in_channels, out_channels / groups, kernel...), bias (out_channels).</summary>
    public enum Layout
    {
        /// <summary>NCW / NCHW / NCDHW</summary>
        ChannelsFirst = 0,
        /// <summary>NWC / NHWC / NDHWC</summary>
        ChannelsLast = 1,
    }

    /// <summary>What a handle can do (deconv_mode).</summary>
    public enum Mode
    {
        /// <summary>Forward only; weights may be packed once with SetWeights.</summary>
        Inference = 0,
        /// <summary>Forward and backward.</summary>
        Training = 1,
    }

    /// <summary>How an output buffer is written (deconv_req).</summary>
    public enum Req
    {
        /// <summary>Not computed; the buffer is untouched and may be null.</summary>
        Null = 0,
        /// <summary>Overwrite the buffer.</summary>
        Write = 1,
        /// <summary>Add the result to what the buffer holds.</summary>
        Add = 2,
    }

    /// <summary>A primitive of a handle, for <see cref="Deconvolution.ImplName"/> (deconv_pass).</summary>
    public enum Pass
    {
        /// <summary>The forward pass.</summary>
        Forward = 0,
        /// <summary>Gradient with respect to src.</summary>
        BackwardData = 1,
        /// <summary>Gradients with respect to weights and bias.</summary>
        BackwardWeights = 2,
    }
}
