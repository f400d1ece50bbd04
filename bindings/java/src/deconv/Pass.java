package deconv;

/** A pass of a handle, for {@link Deconvolution#implName}; mirrors {@code deconv_pass}. */
public enum Pass {
    FORWARD(0),
    BACKWARD_DATA(1),
    /** Weights and bias gradients. */
    BACKWARD_WEIGHTS(2);

    final int value;

    Pass(int value) {
        this.value = value;
    }

    /** The C value. */
    public int value() {
        return value;
    }
}
