package deconv;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A deconvolution (transposed convolution) handle: the oneDNN primitives of one problem.
 *
 * <pre>{@code
 * try (Deconvolution d = new Deconvolution(params)) {
 *     float[] dst = new float[(int) d.dstSize()];
 *     d.forward(src, weights, bias, dst);
 * }
 * }</pre>
 *
 * <p><b>Buffers</b> are never copied. Arrays ({@code float[]} for F32, {@code short[]} of bf16
 * words for BF16, see {@link Bf16}) are pinned for the duration of the call; a long call on large
 * arrays therefore delays the garbage collector, which direct buffers do not. NIO buffers must be
 * direct and in native byte order, e.g.
 * {@code ByteBuffer.allocateDirect(n * 4).order(ByteOrder.nativeOrder()).asFloatBuffer()}; the
 * data starts at the buffer's position, {@code remaining()} must cover the problem, and position
 * and limit are not changed. Every buffer must hold at least the element count the problem needs
 * ({@link #srcSize()}, {@link #weightsSize()}, {@link #biasSize()}, {@link #dstSize()}; gradients
 * have the size of what they are the gradient of), and data tensors are in the problem's
 * {@link Layout}. An F32 overload on a BF16 handle (or the reverse) is an error naming dtype.
 * All these checks happen before any native call and throw {@link DeconvException} with status
 * INVALID_ARGUMENT and a message naming the argument as in deconv.h ("src", "diff_dst", ...);
 * failures of the library carry its status and {@code deconv_last_error()}. On any failure no
 * output is written.
 *
 * <p><b>Threads</b>: {@link #forward}, {@link #backward} and {@link #implName} may run on several
 * threads at once on one handle (they take a shared read lock). {@link #setWeights} and
 * {@link #close} take the exclusive write lock, so they wait for running calls and calls wait
 * for them: closing never frees the native handle under a running call, and a call after close
 * throws DeconvException ("handle: ... closed"). {@link #close} is idempotent. A handle that is
 * never closed is freed by a {@link Cleaner} once unreachable; close it to free the memory
 * promptly.
 */
public final class Deconvolution implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle, freed exactly once by close() or by the Cleaner (never referencing the owner). */
    private static final class NativeHandle implements Runnable {
        final SWIGTYPE_p_deconv pointer;

        NativeHandle(SWIGTYPE_p_deconv pointer) {
            this.pointer = pointer;
        }

        @Override
        public void run() {
            DeconvNative.deconv_destroy(pointer);
        }
    }

    private final DeconvParams params;
    private final long srcSize, weightsSize, biasSize, dstSize;
    private final long[] outputShape;
    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private boolean closed; // guarded by lock

    /** Creates the handle for a problem; throws DeconvException naming the first invalid field. */
    public Deconvolution(DeconvParams params) {
        if (params == null) throw DeconvException.invalid("params: null, but a Deconvolution needs the problem to create");
        NativeLoader.load();
        this.params = params.copy();
        deconv_params p = this.params.toNative();
        deconv_sizes sizes = new deconv_sizes();
        SWIGTYPE_p_deconv pointer = null;
        try {
            int[] status = {0};
            pointer = DeconvNative.deconv_create_handle(p, status);
            DeconvException.check(status[0]);
            DeconvException.check(DeconvNative.deconv_buffer_sizes(p, sizes));
            srcSize = sizes.getSrc();
            weightsSize = sizes.getWeights();
            biasSize = sizes.getBias();
            dstSize = sizes.getDst();
            outputShape = this.params.outputShape();
        } catch (RuntimeException | Error e) {
            if (pointer != null) DeconvNative.deconv_destroy(pointer);
            throw e;
        } finally {
            sizes.delete();
            p.delete();
        }
        handle = new NativeHandle(pointer);
        cleanable = CLEANER.register(this, handle);
    }

    /** A copy of the problem this handle was created for. */
    public DeconvParams params() {
        return params.copy();
    }

    /** Elements of src (and diff_src): batch * in_channels * prod(in_size). */
    public long srcSize() {
        return srcSize;
    }

    /** Elements of weights (and diff_weights): in_channels * out_channels / groups * prod(kernel). */
    public long weightsSize() {
        return weightsSize;
    }

    /** Elements of bias (and diff_bias): out_channels, or 0 without bias. */
    public long biasSize() {
        return biasSize;
    }

    /** Elements of dst (and diff_dst): batch * out_channels * prod(outputShape()). */
    public long dstSize() {
        return dstSize;
    }

    /** The output spatial size, {@code rank} entries, outermost first. */
    public long[] outputShape() {
        return outputShape.clone();
    }

    /**
     * The oneDNN implementation chosen for a pass (e.g. "jit:avx512_core on nChw16c"); throws
     * DeconvException for a pass the handle lacks (the backward passes of an INFERENCE handle).
     */
    public String implName(Pass pass) {
        if (pass == null) throw DeconvException.invalid("pass: null; name the pass (FORWARD, BACKWARD_DATA or BACKWARD_WEIGHTS)");
        Lock l = enter(lock.readLock());
        try {
            String name = DeconvNative.deconv_impl_name(handle.pointer, pass.value);
            if (name == null) throw DeconvException.invalid(DeconvNative.deconv_last_error());
            return name;
        } finally {
            leave(l);
        }
    }

    /** Frees the native handle; later calls throw DeconvException. A second close does nothing. */
    @Override
    public void close() {
        Lock l = lock.writeLock();
        l.lock();
        try {
            if (closed) return;
            closed = true;
            cleanable.clean();
        } finally {
            l.unlock();
        }
    }

    // ---- forward: dst (req) = deconvolution(src, weights) + bias ----------------------------
    // weights == null uses the weights (and bias) of setWeights; bias must then be null.

    public void forward(float[] src, float[] weights, float[] bias, float[] dst, Req req) {
        forwardAny(DType.F32, src, weights, bias, dst, req);
    }

    /** Req.WRITE. */
    public void forward(float[] src, float[] weights, float[] bias, float[] dst) {
        forwardAny(DType.F32, src, weights, bias, dst, Req.WRITE);
    }

    public void forward(FloatBuffer src, FloatBuffer weights, FloatBuffer bias, FloatBuffer dst, Req req) {
        forwardAny(DType.F32, src, weights, bias, dst, req);
    }

    /** Req.WRITE. */
    public void forward(FloatBuffer src, FloatBuffer weights, FloatBuffer bias, FloatBuffer dst) {
        forwardAny(DType.F32, src, weights, bias, dst, Req.WRITE);
    }

    /** BF16 words. */
    public void forward(short[] src, short[] weights, short[] bias, short[] dst, Req req) {
        forwardAny(DType.BF16, src, weights, bias, dst, req);
    }

    /** BF16 words, Req.WRITE. */
    public void forward(short[] src, short[] weights, short[] bias, short[] dst) {
        forwardAny(DType.BF16, src, weights, bias, dst, Req.WRITE);
    }

    /** BF16 words. */
    public void forward(ShortBuffer src, ShortBuffer weights, ShortBuffer bias, ShortBuffer dst, Req req) {
        forwardAny(DType.BF16, src, weights, bias, dst, req);
    }

    /** BF16 words, Req.WRITE. */
    public void forward(ShortBuffer src, ShortBuffer weights, ShortBuffer bias, ShortBuffer dst) {
        forwardAny(DType.BF16, src, weights, bias, dst, Req.WRITE);
    }

    // ---- backward (TRAINING handles) ----------------------------------------------------------
    // diff_src needs weights and diff_dst; diff_weights needs src and diff_dst; diff_bias needs
    // diff_dst and must be Req.NULL without bias. An output with Req.NULL is not written and may
    // be null, as may an input no requested output needs.

    public void backward(float[] src, float[] weights, float[] diffDst, float[] diffSrc, Req reqSrc,
            float[] diffWeights, Req reqWeights, float[] diffBias, Req reqBias) {
        backwardAny(DType.F32, src, weights, diffDst, diffSrc, reqSrc, diffWeights, reqWeights, diffBias, reqBias);
    }

    /** Writes each non-null gradient (Req.WRITE) and skips the null ones (Req.NULL). */
    public void backward(float[] src, float[] weights, float[] diffDst, float[] diffSrc, float[] diffWeights,
            float[] diffBias) {
        backwardAny(DType.F32, src, weights, diffDst, diffSrc, reqOf(diffSrc), diffWeights, reqOf(diffWeights),
                diffBias, reqOf(diffBias));
    }

    public void backward(FloatBuffer src, FloatBuffer weights, FloatBuffer diffDst, FloatBuffer diffSrc,
            Req reqSrc, FloatBuffer diffWeights, Req reqWeights, FloatBuffer diffBias, Req reqBias) {
        backwardAny(DType.F32, src, weights, diffDst, diffSrc, reqSrc, diffWeights, reqWeights, diffBias, reqBias);
    }

    /** Writes each non-null gradient (Req.WRITE) and skips the null ones (Req.NULL). */
    public void backward(FloatBuffer src, FloatBuffer weights, FloatBuffer diffDst, FloatBuffer diffSrc,
            FloatBuffer diffWeights, FloatBuffer diffBias) {
        backwardAny(DType.F32, src, weights, diffDst, diffSrc, reqOf(diffSrc), diffWeights, reqOf(diffWeights),
                diffBias, reqOf(diffBias));
    }

    /** BF16 words. */
    public void backward(short[] src, short[] weights, short[] diffDst, short[] diffSrc, Req reqSrc,
            short[] diffWeights, Req reqWeights, short[] diffBias, Req reqBias) {
        backwardAny(DType.BF16, src, weights, diffDst, diffSrc, reqSrc, diffWeights, reqWeights, diffBias, reqBias);
    }

    /** BF16 words; writes each non-null gradient (Req.WRITE) and skips the null ones (Req.NULL). */
    public void backward(short[] src, short[] weights, short[] diffDst, short[] diffSrc, short[] diffWeights,
            short[] diffBias) {
        backwardAny(DType.BF16, src, weights, diffDst, diffSrc, reqOf(diffSrc), diffWeights, reqOf(diffWeights),
                diffBias, reqOf(diffBias));
    }

    /** BF16 words. */
    public void backward(ShortBuffer src, ShortBuffer weights, ShortBuffer diffDst, ShortBuffer diffSrc,
            Req reqSrc, ShortBuffer diffWeights, Req reqWeights, ShortBuffer diffBias, Req reqBias) {
        backwardAny(DType.BF16, src, weights, diffDst, diffSrc, reqSrc, diffWeights, reqWeights, diffBias, reqBias);
    }

    /** BF16 words; writes each non-null gradient (Req.WRITE) and skips the null ones (Req.NULL). */
    public void backward(ShortBuffer src, ShortBuffer weights, ShortBuffer diffDst, ShortBuffer diffSrc,
            ShortBuffer diffWeights, ShortBuffer diffBias) {
        backwardAny(DType.BF16, src, weights, diffDst, diffSrc, reqOf(diffSrc), diffWeights, reqOf(diffWeights),
                diffBias, reqOf(diffBias));
    }

    // ---- setWeights: packs weights (and bias; null without bias) once into the handle --------
    // The buffers are not referenced after the call.

    public void setWeights(float[] weights, float[] bias) {
        setWeightsAny(DType.F32, weights, bias);
    }

    public void setWeights(FloatBuffer weights, FloatBuffer bias) {
        setWeightsAny(DType.F32, weights, bias);
    }

    /** BF16 words. */
    public void setWeights(short[] weights, short[] bias) {
        setWeightsAny(DType.BF16, weights, bias);
    }

    /** BF16 words. */
    public void setWeights(ShortBuffer weights, ShortBuffer bias) {
        setWeightsAny(DType.BF16, weights, bias);
    }

    // ---- implementation -----------------------------------------------------------------------

    private void forwardAny(DType type, Object src, Object weights, Object bias, Object dst, Req req) {
        checkDType(type);
        if (req == null) throw DeconvException.invalid("req: null; pass Req.WRITE, Req.ADD, or Req.NULL to compute nothing");
        if (weights == null) {
            if (bias != null)
                throw DeconvException.invalid("bias: must be null when weights is null (the bias of setWeights is used)");
        } else {
            weights = Buffers.check("weights", weights, weightsSize, false);
            bias = checkBias(bias);
        }
        src = required("src", "forward needs the input", src, srcSize, false);
        dst = req == Req.NULL ? optional("dst", dst, dstSize, true)
                              : required("dst", "req = " + req + " needs the output buffer", dst, dstSize, true);
        Lock l = enter(lock.readLock());
        try {
            DeconvException.check(DeconvNative.deconv_forward(handle.pointer, src, weights, bias, dst, req.value));
        } finally {
            leave(l);
        }
    }

    private void backwardAny(DType type, Object src, Object weights, Object diffDst, Object diffSrc, Req reqSrc,
            Object diffWeights, Req reqWeights, Object diffBias, Req reqBias) {
        checkDType(type);
        if (reqSrc == null) throw DeconvException.invalid("req_src: null; pass Req.NULL not to compute diff_src");
        if (reqWeights == null)
            throw DeconvException.invalid("req_weights: null; pass Req.NULL not to compute diff_weights");
        if (reqBias == null) throw DeconvException.invalid("req_bias: null; pass Req.NULL not to compute diff_bias");
        if (params.noBias() && reqBias != Req.NULL)
            throw DeconvException.invalid("req_bias: " + reqBias + " but the problem has no bias; use Req.NULL");
        boolean any = reqSrc != Req.NULL || reqWeights != Req.NULL || reqBias != Req.NULL;
        boolean dataGrad = reqSrc != Req.NULL, weightsGrad = reqWeights != Req.NULL;
        diffDst = any ? required("diff_dst", "every backward output needs it", diffDst, dstSize, false)
                      : optional("diff_dst", diffDst, dstSize, false);
        weights = dataGrad
                ? required("weights", "req_src = " + reqSrc + " asks for diff_src, which needs the weights", weights,
                        weightsSize, false)
                : optional("weights", weights, weightsSize, false);
        src = weightsGrad
                ? required("src", "req_weights = " + reqWeights + " asks for diff_weights, which needs the forward "
                        + "input", src, srcSize, false)
                : optional("src", src, srcSize, false);
        diffSrc = dataGrad ? required("diff_src", "req_src is " + reqSrc + ", not Req.NULL", diffSrc, srcSize, true)
                           : optional("diff_src", diffSrc, srcSize, true);
        diffWeights = weightsGrad
                ? required("diff_weights", "req_weights is " + reqWeights + ", not Req.NULL", diffWeights,
                        weightsSize, true)
                : optional("diff_weights", diffWeights, weightsSize, true);
        diffBias = reqBias != Req.NULL
                ? required("diff_bias", "req_bias is " + reqBias + ", not Req.NULL", diffBias, biasSize, true)
                : optional("diff_bias", diffBias, biasSize, true);
        Lock l = enter(lock.readLock());
        try {
            DeconvException.check(DeconvNative.deconv_backward(handle.pointer, src, weights, diffDst, diffSrc,
                    reqSrc.value, diffWeights, reqWeights.value, diffBias, reqBias.value));
        } finally {
            leave(l);
        }
    }

    private void setWeightsAny(DType type, Object weights, Object bias) {
        checkDType(type);
        weights = required("weights", "setWeights needs the weights to pack", weights, weightsSize, false);
        bias = checkBias(bias);
        // Exclusive: the library forbids packing while another thread runs forward.
        Lock l = enter(lock.writeLock());
        try {
            DeconvException.check(DeconvNative.deconv_set_weights(handle.pointer, weights, bias));
        } finally {
            leave(l);
        }
    }

    private Object checkBias(Object bias) {
        if (params.noBias()) {
            if (bias != null) throw DeconvException.invalid("bias: must be null, the problem has no bias (noBias)");
            return null;
        }
        return required("bias", "the problem has a bias (noBias is false)", bias, biasSize, false);
    }

    private void checkDType(DType type) {
        if (type != params.dtype())
            throw DeconvException.invalid("dtype: " + (type == DType.F32 ? "float[]/FloatBuffer data given to a "
                    + "BF16 problem (pass bf16 words as short[]/ShortBuffer, see Bf16)"
                    : "short[]/ShortBuffer (bf16) data given to an F32 problem (pass float[]/FloatBuffer)"));
    }

    /** A buffer that must be there; {@code why} says what needs it, as the library's messages do. */
    private static Object required(String name, String why, Object buffer, long need, boolean output) {
        if (buffer == null) throw DeconvException.invalid(name + ": null, but " + why);
        return Buffers.check(name, buffer, need, output);
    }

    private static Object optional(String name, Object buffer, long need, boolean output) {
        return buffer == null ? null : Buffers.check(name, buffer, need, output);
    }

    private static Req reqOf(Object gradient) {
        return gradient == null ? Req.NULL : Req.WRITE;
    }

    /** Takes a lock and throws if the handle is closed. */
    private Lock enter(Lock l) {
        l.lock();
        if (closed) {
            l.unlock();
            throw DeconvException.invalid("handle: the Deconvolution is closed");
        }
        return l;
    }

    private void leave(Lock l) {
        l.unlock();
        // Keeps this object reachable until the native call returned: otherwise the Cleaner could
        // free the handle during a call made through the last reference, e.g.
        // new Deconvolution(p).forward(...).
        Reference.reachabilityFence(this);
    }
}
