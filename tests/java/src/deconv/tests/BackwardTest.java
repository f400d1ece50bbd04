package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Layout;
import deconv.Mode;
import deconv.Pass;
import deconv.Req;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Backward passes against the reference (exact, see Data). */
class BackwardTest {
    private static void checkBackward(DeconvParams p) {
        try (Deconvolution d = new Deconvolution(p)) {
            Reference ref = new Reference(p, d.outputShape());
            int n = (int) p.batch();
            boolean last = p.layout() == Layout.CHANNELS_LAST;
            float[] src = Data.values((int) d.srcSize(), 21);
            float[] w = Data.values((int) d.weightsSize(), 22);
            float[] diffDst = Data.values((int) d.dstSize(), 23);
            float[] diffSrc = new float[(int) d.srcSize()];
            float[] diffW = new float[(int) d.weightsSize()];
            float[] diffB = p.noBias() ? null : new float[(int) d.biasSize()];
            d.backward(last ? Reference.toChannelsLast(src, n, (int) p.inChannels()) : src, w,
                    last ? Reference.toChannelsLast(diffDst, n, (int) p.outChannels()) : diffDst, diffSrc, diffW, diffB);
            float[] gotSrc = last ? Reference.toChannelsFirst(diffSrc, n, (int) p.inChannels()) : diffSrc;
            assertArrayEquals(ref.backwardData(w, diffDst), Data.toDouble(gotSrc), 0.0, "diff_src " + p);
            assertArrayEquals(ref.backwardWeights(src, diffDst), Data.toDouble(diffW), 0.0, "diff_weights " + p);
            if (diffB != null) assertArrayEquals(ref.backwardBias(diffDst), Data.toDouble(diffB), 0.0, "diff_bias " + p);
        }
    }

    @Test
    void matchesReference2d() {
        checkBackward(ForwardTest.problem2d().mode(Mode.TRAINING));
    }

    @Test
    void matchesReference1dChannelsLastNoBias() {
        checkBackward(new DeconvParams().rank(1).batch(2).inChannels(3).outChannels(4).inSize(5).kernel(3).stride(2)
                .pad(1).adj(1).noBias(true).layout(Layout.CHANNELS_LAST).mode(Mode.TRAINING));
    }

    @Test
    void addAccumulatesAndNullOutputsMayBeNull() {
        DeconvParams p = ForwardTest.problem2d().mode(Mode.TRAINING);
        try (Deconvolution d = new Deconvolution(p)) {
            Reference ref = new Reference(p, d.outputShape());
            float[] src = Data.values((int) d.srcSize(), 24);
            float[] w = Data.values((int) d.weightsSize(), 25);
            float[] diffDst = Data.values((int) d.dstSize(), 26);

            // Only the bias gradient: src, weights and the other outputs may be null.
            float[] diffB = new float[(int) d.biasSize()];
            Arrays.fill(diffB, 1f);
            d.backward(null, null, diffDst, null, Req.NULL, null, Req.NULL, diffB, Req.ADD);
            double[] expected = ref.backwardBias(diffDst);
            for (int i = 0; i < expected.length; i++) expected[i] += 1;
            assertArrayEquals(expected, Data.toDouble(diffB), 0.0);

            float[] diffSrc = Data.values((int) d.srcSize(), 27);
            double[] expectedSrc = ref.backwardData(w, diffDst);
            for (int i = 0; i < expectedSrc.length; i++) expectedSrc[i] += diffSrc[i];
            d.backward(null, w, diffDst, diffSrc, Req.ADD, null, Req.NULL, null, Req.NULL);
            assertArrayEquals(expectedSrc, Data.toDouble(diffSrc), 0.0);
        }
    }

    @Test
    void directBuffers() {
        DeconvParams p = ForwardTest.problem2d().mode(Mode.TRAINING);
        try (Deconvolution d = new Deconvolution(p)) {
            Reference ref = new Reference(p, d.outputShape());
            float[] src = Data.values((int) d.srcSize(), 28);
            float[] w = Data.values((int) d.weightsSize(), 29);
            float[] diffDst = Data.values((int) d.dstSize(), 30);
            FloatBuffer diffSrc = Data.directAt(new float[(int) d.srcSize()], 2);
            FloatBuffer diffW = Data.directAt(new float[(int) d.weightsSize()], 0);
            FloatBuffer diffB = Data.directAt(new float[(int) d.biasSize()], 1);
            d.backward(Data.directAt(src, 1), Data.directAt(w, 2), Data.directAt(diffDst, 3), diffSrc, diffW, diffB);
            assertArrayEquals(ref.backwardData(w, diffDst), Data.toDouble(Data.read(diffSrc, 2, (int) d.srcSize())), 0.0);
            assertArrayEquals(ref.backwardWeights(src, diffDst), Data.toDouble(Data.read(diffW, 0, (int) d.weightsSize())), 0.0);
            assertArrayEquals(ref.backwardBias(diffDst), Data.toDouble(Data.read(diffB, 1, (int) d.biasSize())), 0.0);
        }
    }

    @Test
    void trainingHandleNamesItsBackwardImplementations() {
        try (Deconvolution d = new Deconvolution(ForwardTest.problem2d().mode(Mode.TRAINING))) {
            for (Pass pass : Pass.values()) assertTrue(!d.implName(pass).isEmpty(), pass.toString());
        }
    }
}
