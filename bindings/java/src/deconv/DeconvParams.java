package deconv;

import java.util.Arrays;

/**
 * Description of a deconvolution problem, built with chained setters named after the fields of
 * {@code deconv_params}:
 *
 * <pre>{@code
 * DeconvParams p = new DeconvParams().rank(2).batch(1).inChannels(3).outChannels(8)
 *         .inSize(16, 16).kernel(3, 3).stride(2, 2).pad(1, 1).adj(1, 1);
 * }</pre>
 *
 * A new object holds the defaults of {@code deconv_params_init}: rank 2, batch 1, channels 1,
 * groups 1, in_size/kernel/stride/dilate 1, pad/adj/target_shape 0, bias on, F32,
 * CHANNELS_FIRST, INFERENCE. The spatial setters take {@code rank} values, outermost first
 * (w; h, w; d, h, w). Values are checked by the library when a {@link Deconvolution} is created
 * (or {@link #outputShape()} is called). Not thread-safe; {@link Deconvolution} keeps its own
 * copy.
 */
public final class DeconvParams {
    private static final int MAX_RANK = 3;
    private static final String[] ARRAY_NAMES = {
        "in_size", "kernel", "stride", "pad", "dilate", "adj", "target_shape"};
    private static final int IN_SIZE = 0, KERNEL = 1, STRIDE = 2, PAD = 3, DILATE = 4, ADJ = 5,
            TARGET_SHAPE = 6;

    private int rank = 2;
    private long batch = 1;
    private long inChannels = 1;
    private long outChannels = 1;
    private long groups = 1;
    private final long[][] arrays = {
        {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}};
    // How many values each spatial setter was given (-1: never set), checked against rank.
    private final int[] given = {-1, -1, -1, -1, -1, -1, -1};
    private boolean noBias;
    private DType dtype = DType.F32;
    private Layout layout = Layout.CHANNELS_FIRST;
    private Mode mode = Mode.INFERENCE;

    public DeconvParams() {
    }

    /** An independent copy. */
    public DeconvParams copy() {
        DeconvParams c = new DeconvParams();
        c.rank = rank;
        c.batch = batch;
        c.inChannels = inChannels;
        c.outChannels = outChannels;
        c.groups = groups;
        for (int i = 0; i < arrays.length; i++) {
            c.arrays[i] = arrays[i].clone();
            c.given[i] = given[i];
        }
        c.noBias = noBias;
        c.dtype = dtype;
        c.layout = layout;
        c.mode = mode;
        return c;
    }

    /** Number of spatial dimensions: 1, 2 or 3. */
    public DeconvParams rank(int rank) {
        this.rank = rank;
        return this;
    }

    public DeconvParams batch(long batch) {
        this.batch = batch;
        return this;
    }

    public DeconvParams inChannels(long inChannels) {
        this.inChannels = inChannels;
        return this;
    }

    /** MXNet num_filter. */
    public DeconvParams outChannels(long outChannels) {
        this.outChannels = outChannels;
        return this;
    }

    /** MXNet num_group; divides inChannels and outChannels. */
    public DeconvParams groups(long groups) {
        this.groups = groups;
        return this;
    }

    public DeconvParams inSize(long... values) {
        return set(IN_SIZE, values);
    }

    public DeconvParams kernel(long... values) {
        return set(KERNEL, values);
    }

    public DeconvParams stride(long... values) {
        return set(STRIDE, values);
    }

    /** Removed from both ends of the output. */
    public DeconvParams pad(long... values) {
        return set(PAD, values);
    }

    /** 1-based: 1 is no dilation. */
    public DeconvParams dilate(long... values) {
        return set(DILATE, values);
    }

    /** Extra output at the high end, less than stride. */
    public DeconvParams adj(long... values) {
        return set(ADJ, values);
    }

    /** The output size; when set (all non-zero), pad and adj are derived as MXNet's InferPad does. */
    public DeconvParams targetShape(long... values) {
        return set(TARGET_SHAPE, values);
    }

    /** true: the problem has no bias. */
    public DeconvParams noBias(boolean noBias) {
        this.noBias = noBias;
        return this;
    }

    /** true (the default): the problem has a bias; the opposite of {@link #noBias(boolean)}. */
    public DeconvParams bias(boolean bias) {
        this.noBias = !bias;
        return this;
    }

    public DeconvParams dtype(DType dtype) {
        this.dtype = dtype;
        return this;
    }

    public DeconvParams layout(Layout layout) {
        this.layout = layout;
        return this;
    }

    public DeconvParams mode(Mode mode) {
        this.mode = mode;
        return this;
    }

    public int rank() {
        return rank;
    }

    public long batch() {
        return batch;
    }

    public long inChannels() {
        return inChannels;
    }

    public long outChannels() {
        return outChannels;
    }

    public long groups() {
        return groups;
    }

    /** The first {@code rank} entries (all 3 when rank is out of range); likewise below. */
    public long[] inSize() {
        return get(IN_SIZE);
    }

    public long[] kernel() {
        return get(KERNEL);
    }

    public long[] stride() {
        return get(STRIDE);
    }

    public long[] pad() {
        return get(PAD);
    }

    public long[] dilate() {
        return get(DILATE);
    }

    public long[] adj() {
        return get(ADJ);
    }

    public long[] targetShape() {
        return get(TARGET_SHAPE);
    }

    public boolean noBias() {
        return noBias;
    }

    public DType dtype() {
        return dtype;
    }

    public Layout layout() {
        return layout;
    }

    public Mode mode() {
        return mode;
    }

    /** Output spatial size ({@code rank} entries), computed by the library without creating a handle. */
    public long[] outputShape() {
        NativeLoader.load();
        deconv_params p = toNative();
        try {
            long[] value = new long[1];
            // Index 0 first: the library validates the whole problem (an invalid rank included).
            DeconvException.check(DeconvNative.deconv_output_size_at(p, 0, value));
            long[] shape = new long[rank];
            shape[0] = value[0];
            for (int i = 1; i < rank; i++) {
                DeconvException.check(DeconvNative.deconv_output_size_at(p, i, value));
                shape[i] = value[0];
            }
            return shape;
        } finally {
            p.delete();
        }
    }

    @Override
    public String toString() {
        return "DeconvParams{rank=" + rank + ", batch=" + batch + ", inChannels=" + inChannels
                + ", outChannels=" + outChannels + ", groups=" + groups + ", inSize=" + Arrays.toString(inSize())
                + ", kernel=" + Arrays.toString(kernel()) + ", stride=" + Arrays.toString(stride())
                + ", pad=" + Arrays.toString(pad()) + ", dilate=" + Arrays.toString(dilate())
                + ", adj=" + Arrays.toString(adj()) + ", targetShape=" + Arrays.toString(targetShape())
                + ", noBias=" + noBias + ", dtype=" + dtype + ", layout=" + layout + ", mode=" + mode + "}";
    }

    private DeconvParams set(int which, long[] values) {
        String name = ARRAY_NAMES[which];
        if (values == null) throw DeconvException.invalid(name + ": null, but 1 to " + MAX_RANK + " values are expected");
        if (values.length < 1 || values.length > MAX_RANK)
            throw DeconvException.invalid(name + ": " + values.length + " values given, 1 to " + MAX_RANK + " expected");
        System.arraycopy(values, 0, arrays[which], 0, values.length);
        given[which] = values.length;
        return this;
    }

    private long[] get(int which) {
        return Arrays.copyOf(arrays[which], rank >= 1 && rank <= MAX_RANK ? rank : MAX_RANK);
    }

    /**
     * A native copy, to be deleted by the caller. The library checks the values; the binding only
     * checks what the C struct cannot express (null enums, spatial values given for another rank).
     */
    deconv_params toNative() {
        if (dtype == null) throw DeconvException.invalid("dtype: null, but every problem has one (F32 or BF16)");
        if (layout == null)
            throw DeconvException.invalid("layout: null, but every problem has one (CHANNELS_FIRST or CHANNELS_LAST)");
        if (mode == null) throw DeconvException.invalid("mode: null, but every problem has one (INFERENCE or TRAINING)");
        if (rank >= 1 && rank <= MAX_RANK)
            for (int i = 0; i < given.length; i++)
                if (given[i] != -1 && given[i] != rank)
                    throw DeconvException.invalid(ARRAY_NAMES[i] + ": " + given[i] + " values given for rank = " + rank);
        deconv_params p = new deconv_params();
        if (deconv_params.getCPtr(p) == 0)
            throw new DeconvException(Status.OUT_OF_MEMORY, "params: cannot allocate deconv_params");
        p.setRank(rank);
        p.setBatch(batch);
        p.setIn_channels(inChannels);
        p.setOut_channels(outChannels);
        p.setGroups(groups);
        for (int d = 0; d < MAX_RANK; d++) {
            p.set_in_size(d, arrays[IN_SIZE][d]);
            p.set_kernel(d, arrays[KERNEL][d]);
            p.set_stride(d, arrays[STRIDE][d]);
            p.set_pad(d, arrays[PAD][d]);
            p.set_dilate(d, arrays[DILATE][d]);
            p.set_adj(d, arrays[ADJ][d]);
            p.set_target_shape(d, arrays[TARGET_SHAPE][d]);
        }
        p.setNo_bias(noBias ? 1 : 0);
        p.setDtype(dtype.value);
        p.setLayout(layout.value);
        p.setMode(mode.value);
        return p;
    }
}
