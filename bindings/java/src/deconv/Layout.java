package deconv;

/**
 * Layout of the data tensors (src, dst and their gradients); mirrors {@code deconv_layout}.
 * Weights are always (in_channels, out_channels / groups, kernel...) and bias (out_channels).
 */
public enum Layout {
    /** NCW / NCHW / NCDHW. */
    CHANNELS_FIRST(0),
    /** NWC / NHWC / NDHWC. */
    CHANNELS_LAST(1);

    final int value;

    Layout(int value) {
        this.value = value;
    }

    /** The C value. */
    public int value() {
        return value;
    }
}
