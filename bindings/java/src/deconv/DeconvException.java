package deconv;

/**
 * A failed libdeconv call. The message names the offending field or argument as spelled in
 * deconv.h ("in_channels", "kernel[1]", "dst", "diff_dst", ...): for a native failure it is
 * {@code deconv_last_error()}; for a check the binding makes before calling the library (null or
 * too short buffers, wrong element type, closed handle) the status is INVALID_ARGUMENT.
 */
public class DeconvException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status status;

    public DeconvException(Status status, String message) {
        super(message);
        this.status = status;
    }

    /** The status of the failure (never OK). */
    public Status getStatus() {
        return status;
    }

    /** The exception for a native call that returned {@code status}, with the library's message. */
    static DeconvException fromNative(int status) {
        return new DeconvException(Status.of(status), DeconvNative.deconv_last_error());
    }

    /** A failure found by the binding itself. */
    static DeconvException invalid(String message) {
        return new DeconvException(Status.INVALID_ARGUMENT, message);
    }

    /** Throws for any status but OK. */
    static void check(int status) {
        if (status != Status.OK.value()) throw fromNative(status);
    }
}
