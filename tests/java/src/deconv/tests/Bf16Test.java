package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.Bf16;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import org.junit.jupiter.api.Test;

/** bf16 conversions (they need no AVX-512). */
class Bf16Test {
    @Test
    void valuesWithEightSignificantBitsRoundTripExactly() {
        float[] a = {0f, -0f, 1f, -2.5f, 0.125f, 255f, 1.0078125f /* 1 + 2^-7 */, 3.0e38f, Float.MIN_NORMAL,
            Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY};
        a[7] = Float.intBitsToFloat(Float.floatToIntBits(a[7]) & 0xffff0000); // keep it exactly representable
        float[] back = Bf16.toFloat(Bf16.fromFloat(a));
        assertArrayEquals(a, back);
        assertEquals((short) 0x3f80, Bf16.fromFloat(new float[] {1f})[0]);
    }

    @Test
    void roundsToNearestEvenAndKeepsNaN() {
        float tieDown = Float.intBitsToFloat(0x3f808000); // halfway between 0x3f80 and 0x3f81: to even 0x3f80
        float tieUp = Float.intBitsToFloat(0x3f818000);   // halfway between 0x3f81 and 0x3f82: to even 0x3f82
        float above = Float.intBitsToFloat(0x3f808001);   // just above halfway: up
        short[] w = Bf16.fromFloat(new float[] {tieDown, tieUp, above, Float.NaN});
        assertEquals((short) 0x3f80, w[0]);
        assertEquals((short) 0x3f82, w[1]);
        assertEquals((short) 0x3f81, w[2]);
        assertTrue(Float.isNaN(Bf16.toFloat(new short[] {w[3]})[0]));
    }

    @Test
    void directBuffersConvertFromTheirPositions() {
        float[] values = Data.values(9, 40);
        FloatBuffer src = Data.directAt(values, 2);
        ShortBuffer words = Data.directShorts(12);
        words.position(3);
        Bf16.fromFloat(src, words);
        assertEquals(2, src.position());
        assertEquals(3, words.position());
        FloatBuffer back = Data.directFloats(9);
        Bf16.toFloat(words.slice().limit(9), back);
        assertArrayEquals(values, Data.read(back, 0, 9));
        assertArrayEquals(Bf16.fromFloat(values), new short[] {words.get(3), words.get(4), words.get(5), words.get(6),
            words.get(7), words.get(8), words.get(9), words.get(10), words.get(11)});
    }
}
