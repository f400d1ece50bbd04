package deconv.tests;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.Random;

/**
 * Test data. Values are multiples of 1/8 in [-1, 1]: products are multiples of 1/64, and every
 * partial sum of the small problems here is exactly representable in float (and each value in
 * bf16), so the library's result is exact whatever its summation order, and tests compare f32
 * results with the double reference exactly.
 */
final class Data {
    private Data() {
    }

    static float[] values(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (r.nextInt(17) - 8) / 8.0f;
        return a;
    }

    static FloatBuffer directFloats(int n) {
        return ByteBuffer.allocateDirect(n * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
    }

    static ShortBuffer directShorts(int n) {
        return ByteBuffer.allocateDirect(n * 2).order(ByteOrder.nativeOrder()).asShortBuffer();
    }

    /** A direct buffer holding a at [offset, offset + a.length) = [position, limit), with spare room after. */
    static FloatBuffer directAt(float[] a, int offset) {
        FloatBuffer b = directFloats(offset + a.length + 3);
        b.position(offset);
        b.put(a);
        b.position(offset).limit(offset + a.length);
        return b;
    }

    static float[] read(FloatBuffer b, int offset, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = b.get(offset + i);
        return a;
    }

    static double[] toDouble(float[] a) {
        double[] b = new double[a.length];
        for (int i = 0; i < a.length; i++) b[i] = a[i];
        return b;
    }
}
