package deconv;

/** What a handle can do; mirrors {@code deconv_mode}. */
public enum Mode {
    /** Forward only; weights may be packed once with {@link Deconvolution#setWeights}. */
    INFERENCE(0),
    /** Forward and backward. */
    TRAINING(1);

    final int value;

    Mode(int value) {
        this.value = value;
    }

    /** The C value. */
    public int value() {
        return value;
    }
}
