package deconv;

/** How an output buffer receives its result; mirrors {@code deconv_req}. */
public enum Req {
    /** Compute nothing for this output; its buffer is untouched and may be null. */
    NULL(0),
    /** Overwrite the buffer. */
    WRITE(1),
    /** Add the result to what the buffer holds. */
    ADD(2);

    final int value;

    Req(int value) {
        this.value = value;
    }

    /** The C value. */
    public int value() {
        return value;
    }
}
