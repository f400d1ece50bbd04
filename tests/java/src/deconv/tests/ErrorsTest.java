package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.Bf16;
import deconv.DType;
import deconv.DeconvException;
import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Mode;
import deconv.NativeProbe;
import deconv.Pass;
import deconv.Req;
import deconv.Status;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Every error path: a DeconvException with the status and a message naming the argument as in
 * deconv.h; native failures carry deconv_last_error(); no output is written on failure.
 */
class ErrorsTest {
    /** 1 x 2 x 3x3 -> 2 channels, kernel 2: src 18, weights 16, bias 2, dst 2*4*4 = 32. */
    static DeconvParams small() {
        return new DeconvParams().inChannels(2).outChannels(2).inSize(3, 3).kernel(2, 2);
    }

    static DeconvException fails(Status status, String needle, Executable call) {
        DeconvException e = assertThrows(DeconvException.class, call);
        assertEquals(status, e.getStatus(), e.getMessage());
        assertTrue(e.getMessage().contains(needle), "\"" + e.getMessage() + "\" should contain \"" + needle + "\"");
        return e;
    }

    /** A native failure: the message is the library's, read on the same thread. */
    static void failsNatively(String needle, Executable call) {
        DeconvException e = fails(Status.INVALID_ARGUMENT, needle, call);
        assertEquals(NativeProbe.lastError(), e.getMessage());
    }

    @Test
    void invalidParamsAreReportedByTheLibrary() {
        failsNatively("rank = 4", () -> new Deconvolution(small().rank(4)));
        failsNatively("groups", () -> new Deconvolution(small().groups(3)));
        failsNatively("in_channels", () -> new Deconvolution(small().inChannels(0)));
        failsNatively("kernel[1]", () -> new Deconvolution(small().kernel(2, -1)));
        failsNatively("adj[0]", () -> new Deconvolution(small().stride(2, 2).adj(2, 0)));
        failsNatively("target_shape", () -> new Deconvolution(small().targetShape(100, 100)));
        failsNatively("rank", () -> small().rank(0).outputShape());
    }

    @Test
    void paramsTheBindingRejects() {
        fails(Status.INVALID_ARGUMENT, "params", () -> new Deconvolution(null));
        fails(Status.INVALID_ARGUMENT, "kernel: 1 values given for rank = 2", () -> new Deconvolution(small().kernel(3)));
        fails(Status.INVALID_ARGUMENT, "stride: 4 values", () -> small().stride(1, 1, 1, 1));
        fails(Status.INVALID_ARGUMENT, "dtype", () -> new Deconvolution(small().dtype(null)));
    }

    @Test
    void shortBuffersAreRejectedBeforeTheNativeCall() {
        try (Deconvolution d = new Deconvolution(small())) {
            float[] src = new float[18], w = new float[16], b = new float[2], dst = new float[32];
            fails(Status.INVALID_ARGUMENT, "dst: 31 elements, the problem needs 32",
                    () -> d.forward(src, w, b, new float[31]));
            fails(Status.INVALID_ARGUMENT, "src: 17 elements", () -> d.forward(new float[17], w, b, dst));
            fails(Status.INVALID_ARGUMENT, "weights: 15 elements", () -> d.forward(src, new float[15], b, dst));
            fails(Status.INVALID_ARGUMENT, "bias: 1 elements", () -> d.forward(src, w, new float[1], dst));
            FloatBuffer shortDst = Data.directFloats(40);
            shortDst.position(9);
            fails(Status.INVALID_ARGUMENT, "dst: 31 elements remaining, the problem needs 32",
                    () -> d.forward(Data.directFloats(18), Data.directFloats(16), Data.directFloats(2), shortDst));
        }
    }

    @Test
    void nioBuffersMustBeDirectNativeOrderAndWritable() {
        try (Deconvolution d = new Deconvolution(small())) {
            FloatBuffer src = Data.directFloats(18), w = Data.directFloats(16), b = Data.directFloats(2);
            fails(Status.INVALID_ARGUMENT, "dst: a heap FloatBuffer", () -> d.forward(src, w, b, FloatBuffer.allocate(32)));
            fails(Status.INVALID_ARGUMENT, "src: a heap FloatBuffer",
                    () -> d.forward(FloatBuffer.wrap(new float[18]), w, b, Data.directFloats(32)));
            ByteOrder other = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? ByteOrder.BIG_ENDIAN
                                                                                 : ByteOrder.LITTLE_ENDIAN;
            FloatBuffer swapped = ByteBuffer.allocateDirect(32 * 4).order(other).asFloatBuffer();
            fails(Status.INVALID_ARGUMENT, "dst: the FloatBuffer has byte order", () -> d.forward(src, w, b, swapped));
            fails(Status.INVALID_ARGUMENT, "dst: a read-only FloatBuffer",
                    () -> d.forward(src, w, b, Data.directFloats(32).asReadOnlyBuffer()));
        }
    }

    /** A check of the binding with exactly this message. */
    static void failsWith(String message, Executable call) {
        assertEquals(message, fails(Status.INVALID_ARGUMENT, message, call).getMessage());
    }

    @Test
    void nullBuffersAndRequestsNameTheArgumentAndTheReason() {
        try (Deconvolution d = new Deconvolution(small())) {
            float[] src = new float[18], w = new float[16], b = new float[2], dst = new float[32];
            failsWith("src: null, but forward needs the input", () -> d.forward(null, w, b, dst));
            failsWith("dst: null, but req = WRITE needs the output buffer", () -> d.forward(src, w, b, null));
            failsWith("dst: null, but req = ADD needs the output buffer", () -> d.forward(src, w, b, null, Req.ADD));
            failsWith("req: null; pass Req.WRITE, Req.ADD, or Req.NULL to compute nothing",
                    () -> d.forward(src, w, b, dst, null));
            failsWith("bias: null, but the problem has a bias (noBias is false)", () -> d.forward(src, w, null, dst));
            failsWith("bias: null, but the problem has a bias (noBias is false)", () -> d.setWeights(w, null));
            fails(Status.INVALID_ARGUMENT, "bias: must be null when weights is null", () -> d.forward(src, null, b, dst));
            failsWith("weights: null, but setWeights needs the weights to pack", () -> d.setWeights((float[]) null, b));
            failsWith("pass: null; name the pass (FORWARD, BACKWARD_DATA or BACKWARD_WEIGHTS)", () -> d.implName(null));
        }
        try (Deconvolution d = new Deconvolution(small().noBias(true))) {
            fails(Status.INVALID_ARGUMENT, "bias: must be null",
                    () -> d.forward(new float[18], new float[16], new float[2], new float[32]));
            fails(Status.INVALID_ARGUMENT, "bias: must be null", () -> d.setWeights(new float[16], new float[2]));
        }
        failsWith("params: null, but a Deconvolution needs the problem to create", () -> new Deconvolution(null));
        failsWith("in_size: null, but 1 to 3 values are expected", () -> small().inSize((long[]) null));
        failsWith("layout: null, but every problem has one (CHANNELS_FIRST or CHANNELS_LAST)",
                () -> new Deconvolution(small().layout(null)));
        failsWith("src: null, but it holds the floats to convert", () -> Bf16.fromFloat((float[]) null));
        failsWith("dst: null, but the conversion needs somewhere to write", () -> Bf16.toFloat(new short[1], null));
    }

    @Test
    void forwardWithoutWeightsBeforeSetWeights() {
        try (Deconvolution d = new Deconvolution(small())) {
            float[] dst = new float[32];
            Arrays.fill(dst, 3f);
            failsNatively("weights", () -> d.forward(new float[18], null, null, dst));
            float[] untouched = new float[32];
            Arrays.fill(untouched, 3f);
            assertArrayEquals(untouched, dst, "no output is written on failure");
        }
    }

    @Test
    void backwardErrors() {
        try (Deconvolution d = new Deconvolution(small())) {
            float[] src = new float[18], w = new float[16], dd = new float[32];
            failsNatively("mode", () -> d.backward(src, w, dd, new float[18], new float[16], new float[2]));
            failsNatively("pass = 1", () -> d.implName(Pass.BACKWARD_DATA));
        }
        try (Deconvolution d = new Deconvolution(small().mode(Mode.TRAINING))) {
            float[] src = new float[18], w = new float[16], dd = new float[32];
            failsWith("diff_dst: null, but every backward output needs it",
                    () -> d.backward(src, w, null, new float[18], null, null));
            failsWith("weights: null, but req_src = WRITE asks for diff_src, which needs the weights",
                    () -> d.backward(src, null, dd, new float[18], null, null));
            failsWith("src: null, but req_weights = WRITE asks for diff_weights, which needs the forward input",
                    () -> d.backward(null, w, dd, null, new float[16], null));
            fails(Status.INVALID_ARGUMENT, "diff_bias: 1 elements", () -> d.backward(src, w, dd, null, null, new float[1]));
            failsWith("diff_src: null, but req_src is WRITE, not Req.NULL",
                    () -> d.backward(src, w, dd, null, Req.WRITE, null, Req.NULL, null, Req.NULL));
            failsWith("diff_weights: null, but req_weights is ADD, not Req.NULL",
                    () -> d.backward(src, w, dd, null, Req.NULL, null, Req.ADD, null, Req.NULL));
            failsWith("diff_bias: null, but req_bias is WRITE, not Req.NULL",
                    () -> d.backward(src, w, dd, null, Req.NULL, null, Req.NULL, null, Req.WRITE));
            failsWith("req_weights: null; pass Req.NULL not to compute diff_weights",
                    () -> d.backward(src, w, dd, null, Req.NULL, null, null, null, Req.NULL));
        }
        try (Deconvolution d = new Deconvolution(small().mode(Mode.TRAINING).noBias(true))) {
            fails(Status.INVALID_ARGUMENT, "req_bias",
                    () -> d.backward(null, null, new float[32], null, Req.NULL, null, Req.NULL, new float[2], Req.WRITE));
        }
    }

    @Test
    void elementTypeMustMatchTheDtype() {
        try (Deconvolution d = new Deconvolution(small())) {
            fails(Status.INVALID_ARGUMENT, "dtype",
                    () -> d.forward(new short[18], new short[16], new short[2], new short[32]));
            fails(Status.INVALID_ARGUMENT, "dtype", () -> d.setWeights(new short[16], new short[2]));
        }
        try (Deconvolution d = new Deconvolution(small().dtype(DType.BF16))) {
            fails(Status.INVALID_ARGUMENT, "dtype",
                    () -> d.forward(new float[18], new float[16], new float[2], new float[32]));
        }
    }
}
