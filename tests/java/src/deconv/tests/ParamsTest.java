package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import deconv.DType;
import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Layout;
import deconv.Mode;
import deconv.NativeProbe;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** DeconvParams: defaults, copies, shapes and sizes. */
class ParamsTest {
    @Test
    void defaultsMatchDeconvParamsInit() {
        DeconvParams p = new DeconvParams();
        Map<String, Long> c = NativeProbe.paramsInit();
        assertEquals(c.get("rank"), (long) p.rank());
        assertEquals(c.get("batch"), p.batch());
        assertEquals(c.get("in_channels"), p.inChannels());
        assertEquals(c.get("out_channels"), p.outChannels());
        assertEquals(c.get("groups"), p.groups());
        assertEquals(c.get("no_bias") != 0, p.noBias());
        assertEquals(c.get("dtype"), (long) p.dtype().value());
        assertEquals(c.get("layout"), (long) p.layout().value());
        assertEquals(c.get("mode"), (long) p.mode().value());
        DeconvParams all = new DeconvParams().rank(3);
        for (int i = 0; i < 3; i++) {
            assertEquals(c.get("in_size[" + i + "]"), all.inSize()[i]);
            assertEquals(c.get("kernel[" + i + "]"), all.kernel()[i]);
            assertEquals(c.get("stride[" + i + "]"), all.stride()[i]);
            assertEquals(c.get("pad[" + i + "]"), all.pad()[i]);
            assertEquals(c.get("dilate[" + i + "]"), all.dilate()[i]);
            assertEquals(c.get("adj[" + i + "]"), all.adj()[i]);
            assertEquals(c.get("target_shape[" + i + "]"), all.targetShape()[i]);
        }
        assertEquals(DType.F32, p.dtype());
        assertEquals(Layout.CHANNELS_FIRST, p.layout());
        assertEquals(Mode.INFERENCE, p.mode());
        assertFalse(p.noBias());
    }

    @Test
    void outputShapeFollowsTheFormula() {
        // out = stride * (in - 1) + dilate * (kernel - 1) + 1 - 2 * pad + adj
        DeconvParams p = ForwardTest.problem2d();
        assertArrayEquals(new long[] {2 * 2 + 2 + 1 - 2 + 1, 3 * 3 + 2 + 1}, p.outputShape());
        try (Deconvolution d = new Deconvolution(p)) {
            assertArrayEquals(p.outputShape(), d.outputShape());
            assertEquals(2 * 4 * 3 * 4, d.srcSize());
            assertEquals(4 * 3 * 3 * 2, d.weightsSize());
            assertEquals(6, d.biasSize());
            assertEquals(2 * 6 * 6 * 12, d.dstSize());
        }
        try (Deconvolution d = new Deconvolution(p.copy().bias(false))) {
            assertEquals(0, d.biasSize());
        }
    }

    @Test
    void handleKeepsItsOwnCopy() {
        DeconvParams p = ForwardTest.problem2d();
        try (Deconvolution d = new Deconvolution(p)) {
            p.outChannels(8).kernel(5, 5);
            assertEquals(6, d.params().outChannels());
            assertArrayEquals(new long[] {3, 2}, d.params().kernel());
            assertEquals(2 * 6 * 6 * 12, d.dstSize());
        }
    }
}
