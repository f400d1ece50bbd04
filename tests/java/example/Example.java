import deconv.DeconvException;
import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Pass;
import java.util.Arrays;

/** The README's Java example: a 2x upsampling deconvolution of a 2x2 image. */
public class Example {
    public static void main(String[] args) {
        DeconvParams params = new DeconvParams()
                .rank(2).batch(1).inChannels(1).outChannels(1)
                .inSize(2, 2).kernel(2, 2).stride(2, 2);
        try (Deconvolution deconv = new Deconvolution(params)) {
            float[] src = {1, 2, 3, 4};                       // N=1, C=1, H=2, W=2
            float[] weights = {1, 10, 100, 1000};             // in, out/groups, kH, kW
            float[] bias = {0.5f};
            float[] dst = new float[(int) deconv.dstSize()];  // 1 x 1 x 4 x 4
            deconv.forward(src, weights, bias, dst);
            System.out.println("output " + Arrays.toString(deconv.outputShape()) + ": " + Arrays.toString(dst));
            System.out.println("implementation: " + deconv.implName(Pass.FORWARD));
        } catch (DeconvException e) {
            System.err.println("deconv failed (" + e.getStatus() + "): " + e.getMessage());
            System.exit(1);
        }
    }
}
