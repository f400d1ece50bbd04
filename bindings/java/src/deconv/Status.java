package deconv;

/** Result of a library call; mirrors {@code deconv_status}. */
public enum Status {
    OK(0),
    /** A parameter, buffer or request is not acceptable. */
    INVALID_ARGUMENT(1),
    /** Valid, but this build or CPU cannot do it (e.g. bf16 without AVX-512). */
    UNSUPPORTED(2),
    OUT_OF_MEMORY(3),
    /** A bug or an unexpected oneDNN failure. */
    INTERNAL_ERROR(4);

    private final int value;

    Status(int value) {
        this.value = value;
    }

    /** The C value ({@code DECONV_OK} = 0, ...). */
    public int value() {
        return value;
    }

    /** The status of a C value; a value this binding does not know maps to INTERNAL_ERROR. */
    public static Status of(int value) {
        for (Status s : values())
            if (s.value == value) return s;
        return INTERNAL_ERROR;
    }
}
