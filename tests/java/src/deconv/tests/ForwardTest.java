package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.Bf16;
import deconv.DType;
import deconv.DeconvLibrary;
import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Layout;
import deconv.Req;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Forward passes against the reference (exact for f32, see Data). */
class ForwardTest {
    /** 2D, groups, stride, pad, dilation and adj at once. */
    static DeconvParams problem2d() {
        return new DeconvParams().rank(2).batch(2).inChannels(4).outChannels(6).groups(2)
                .inSize(3, 4).kernel(3, 2).stride(2, 3).pad(1, 0).dilate(1, 2).adj(1, 0);
    }

    private static void checkForward(DeconvParams p) {
        try (Deconvolution d = new Deconvolution(p)) {
            Reference ref = new Reference(p, d.outputShape());
            float[] src = Data.values((int) d.srcSize(), 1);
            float[] w = Data.values((int) d.weightsSize(), 2);
            float[] b = p.noBias() ? null : Data.values((int) d.biasSize(), 3);
            float[] dst = new float[(int) d.dstSize()];
            boolean last = p.layout() == Layout.CHANNELS_LAST;
            int n = (int) p.batch();
            d.forward(last ? Reference.toChannelsLast(src, n, (int) p.inChannels()) : src, w, b, dst);
            float[] got = last ? Reference.toChannelsFirst(dst, n, (int) p.outChannels()) : dst;
            assertArrayEquals(ref.forward(src, w, b), Data.toDouble(got), 0.0, p.toString());
        }
    }

    @Test
    void matchesReference2d() {
        checkForward(problem2d());
    }

    @Test
    void matchesReference1dNoBias() {
        checkForward(new DeconvParams().rank(1).batch(1).inChannels(3).outChannels(2).inSize(7).kernel(4)
                .stride(3).pad(2).adj(2).noBias(true));
    }

    @Test
    void matchesReference3d() {
        checkForward(new DeconvParams().rank(3).batch(1).inChannels(2).outChannels(3).inSize(2, 3, 2)
                .kernel(2, 2, 3).stride(2, 1, 2).pad(0, 1, 1));
    }

    @Test
    void matchesReferenceChannelsLast() {
        checkForward(problem2d().layout(Layout.CHANNELS_LAST));
    }

    @Test
    void matchesReferenceWithTargetShape() {
        DeconvParams p = new DeconvParams().inChannels(2).outChannels(2).inSize(4, 5).kernel(3, 3).stride(2, 2)
                .targetShape(8, 10);
        assertArrayEquals(new long[] {8, 10}, p.outputShape());
        checkForward(p);
    }

    @Test
    void addAccumulatesAndNullLeavesDstAlone() {
        DeconvParams p = problem2d();
        try (Deconvolution d = new Deconvolution(p)) {
            float[] src = Data.values((int) d.srcSize(), 4);
            float[] w = Data.values((int) d.weightsSize(), 5);
            float[] b = Data.values((int) d.biasSize(), 6);
            double[] expected = new Reference(p, d.outputShape()).forward(src, w, b);
            float[] dst = new float[(int) d.dstSize()];
            Arrays.fill(dst, 0.5f);
            d.forward(src, w, b, dst, Req.ADD);
            for (int i = 0; i < expected.length; i++) expected[i] += 0.5;
            assertArrayEquals(expected, Data.toDouble(dst), 0.0);

            float[] untouched = dst.clone();
            d.forward(src, w, b, dst, Req.NULL);
            assertArrayEquals(untouched, dst);
            d.forward(src, w, b, null, Req.NULL); // the output of Req.NULL may be null
        }
    }

    @Test
    void packedWeightsGiveTheSameResult() {
        DeconvParams p = problem2d();
        try (Deconvolution d = new Deconvolution(p)) {
            float[] src = Data.values((int) d.srcSize(), 7);
            float[] w = Data.values((int) d.weightsSize(), 8);
            float[] b = Data.values((int) d.biasSize(), 9);
            d.setWeights(w, b);
            Arrays.fill(w, 100f); // the handle keeps its own packed copy
            float[] dst = new float[(int) d.dstSize()];
            d.forward(src, null, null, dst);
            w = Data.values((int) d.weightsSize(), 8);
            assertArrayEquals(new Reference(p, d.outputShape()).forward(src, w, b), Data.toDouble(dst), 0.0);
        }
    }

    /** The native side reads and writes the caller's direct memory, from each buffer's position. */
    @Test
    void directBuffersAreUsedInPlace() {
        DeconvParams p = problem2d();
        try (Deconvolution d = new Deconvolution(p)) {
            float[] src = Data.values((int) d.srcSize(), 10);
            float[] w = Data.values((int) d.weightsSize(), 11);
            float[] b = Data.values((int) d.biasSize(), 12);
            int dstOffset = 5, n = (int) d.dstSize();
            FloatBuffer dst = Data.directFloats(dstOffset + n + 2);
            for (int i = 0; i < dst.capacity(); i++) dst.put(i, -7f);
            dst.position(dstOffset);
            d.forward(Data.directAt(src, 3), Data.directAt(w, 1), Data.directAt(b, 2), dst);

            assertEquals(dstOffset, dst.position(), "position unchanged");
            assertArrayEquals(new Reference(p, d.outputShape()).forward(src, w, b),
                    Data.toDouble(Data.read(dst, dstOffset, n)), 0.0);
            for (int i : new int[] {0, dstOffset - 1, dstOffset + n, dstOffset + n + 1})
                assertEquals(-7f, dst.get(i), "outside [position, position + dstSize) at " + i);

            // Written by native code straight into the buffer Java reads: no copy-back exists.
            d.forward(Data.directAt(src, 0), Data.directAt(w, 0), Data.directAt(b, 0), dst, Req.ADD);
            assertEquals(2 * new Reference(p, d.outputShape()).forward(src, w, b)[0], dst.get(dstOffset), 0.0);
        }
    }

    /** bf16 inputs are exact (multiples of 1/8); the output is one rounding to bf16, compared to 1 ulp. */
    @Test
    void bf16MatchesReference() {
        assertTrue(DeconvLibrary.bf16Supported(), "bf16 runs on every CPU");
        DeconvParams p = problem2d().dtype(DType.BF16);
        try (Deconvolution d = new Deconvolution(p)) {
            float[] src = Data.values((int) d.srcSize(), 13);
            float[] w = Data.values((int) d.weightsSize(), 14);
            float[] b = Data.values((int) d.biasSize(), 15);
            double[] expected = new Reference(p, d.outputShape()).forward(src, w, b);
            short[] dst = new short[(int) d.dstSize()];
            d.forward(Bf16.fromFloat(src), Bf16.fromFloat(w), Bf16.fromFloat(b), dst);
            assertBf16(expected, Bf16.toFloat(dst));

            ShortBuffer dstBuffer = Data.directShorts(dst.length);
            d.forward(direct(Bf16.fromFloat(src)), direct(Bf16.fromFloat(w)), direct(Bf16.fromFloat(b)), dstBuffer);
            short[] fromBuffer = new short[dst.length];
            dstBuffer.get(fromBuffer);
            assertArrayEquals(dst, fromBuffer);
        }
    }

    static ShortBuffer direct(short[] a) {
        ShortBuffer b = Data.directShorts(a.length);
        b.put(a).flip();
        return b;
    }

    static void assertBf16(double[] expected, float[] got) {
        for (int i = 0; i < expected.length; i++)
            assertEquals(expected[i], got[i], Math.abs(expected[i]) / 256 + 1e-30, "element " + i);
    }
}
