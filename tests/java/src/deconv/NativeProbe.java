package deconv;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Test-only access to SWIG's package-private layer, for checks the public API cannot make (the
 * library's defaults and last error, the header the glue was compiled with). It is compiled into
 * the tests' jar, not into deconv.jar: on the class path, package deconv may span two jars.
 */
public final class NativeProbe {
    private NativeProbe() {
    }

    /** deconv_last_error() of the calling thread. */
    public static String lastError() {
        NativeLoader.load();
        return DeconvNative.deconv_last_error();
    }

    /** DECONV_VERSION of the deconv.h the glue was compiled with. */
    public static int headerVersion() {
        NativeLoader.load();
        return DeconvNative.deconv_header_version();
    }

    /** The fields deconv_params_init sets, by C name ("in_size[0]" for array entries). */
    public static Map<String, Long> paramsInit() {
        NativeLoader.load();
        deconv_params c = new deconv_params(); // SWIG's constructor runs deconv_params_init
        try {
            Map<String, Long> m = new LinkedHashMap<>();
            m.put("rank", (long) c.getRank());
            m.put("batch", c.getBatch());
            m.put("in_channels", c.getIn_channels());
            m.put("out_channels", c.getOut_channels());
            m.put("groups", c.getGroups());
            m.put("no_bias", (long) c.getNo_bias());
            m.put("dtype", (long) c.getDtype());
            m.put("layout", (long) c.getLayout());
            m.put("mode", (long) c.getMode());
            for (int i = 0; i < 3; i++) {
                m.put("in_size[" + i + "]", c.get_in_size(i));
                m.put("kernel[" + i + "]", c.get_kernel(i));
                m.put("stride[" + i + "]", c.get_stride(i));
                m.put("pad[" + i + "]", c.get_pad(i));
                m.put("dilate[" + i + "]", c.get_dilate(i));
                m.put("adj[" + i + "]", c.get_adj(i));
                m.put("target_shape[" + i + "]", c.get_target_shape(i));
            }
            return m;
        } finally {
            c.delete();
        }
    }
}
