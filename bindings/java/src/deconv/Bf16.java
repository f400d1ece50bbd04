package deconv;

import java.nio.FloatBuffer;
import java.nio.ShortBuffer;

/**
 * Conversions between float and bfloat16 words (the upper 16 bits of a float, kept in a short),
 * done by the library: round to nearest even, NaN stays NaN. Buffers follow the rules of
 * {@link Deconvolution} (direct, native byte order, data from the position, positions unchanged).
 */
public final class Bf16 {
    private Bf16() {
    }

    /** New bf16 words for {@code src}. */
    public static short[] fromFloat(float[] src) {
        if (src == null) throw DeconvException.invalid("src: null, but it holds the floats to convert");
        short[] dst = new short[src.length];
        fromFloat(src, dst);
        return dst;
    }

    /** New floats for the bf16 words of {@code src} (exact). */
    public static float[] toFloat(short[] src) {
        if (src == null) throw DeconvException.invalid("src: null, but it holds the bf16 words to convert");
        float[] dst = new float[src.length];
        toFloat(src, dst);
        return dst;
    }

    /** Converts all of src into the first src.length elements of dst. */
    public static void fromFloat(float[] src, short[] dst) {
        convert(true, src, src == null ? 0 : src.length, dst);
    }

    /** Converts all of src into the first src.length elements of dst. */
    public static void toFloat(short[] src, float[] dst) {
        convert(false, src, src == null ? 0 : src.length, dst);
    }

    /** Converts src's remaining elements into dst from its position. */
    public static void fromFloat(FloatBuffer src, ShortBuffer dst) {
        convert(true, src, src == null ? 0 : src.remaining(), dst);
    }

    /** Converts src's remaining elements into dst from its position. */
    public static void toFloat(ShortBuffer src, FloatBuffer dst) {
        convert(false, src, src == null ? 0 : src.remaining(), dst);
    }

    private static void convert(boolean toBf16, Object src, long count, Object dst) {
        if (src == null) throw DeconvException.invalid("src: null, but it holds the values to convert");
        if (dst == null) throw DeconvException.invalid("dst: null, but the conversion needs somewhere to write");
        src = Buffers.check("src", src, count, false);
        dst = Buffers.check("dst", dst, count, true);
        NativeLoader.load();
        DeconvException.check(toBf16 ? DeconvNative.deconv_f32_to_bf16(src, dst, count)
                                     : DeconvNative.deconv_bf16_to_f32(src, dst, count));
    }
}
