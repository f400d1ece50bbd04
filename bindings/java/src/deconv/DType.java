package deconv;

/** Element type of every buffer of a problem; mirrors {@code deconv_dtype}. */
public enum DType {
    /** float[] / FloatBuffer. */
    F32(0),
    /** bfloat16 as raw 16-bit words: short[] / ShortBuffer (see {@link Bf16}). */
    BF16(1);

    final int value;

    DType(int value) {
        this.value = value;
    }

    /** The C value. */
    public int value() {
        return value;
    }
}
