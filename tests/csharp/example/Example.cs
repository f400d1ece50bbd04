// The README's C# example: a 2D deconvolution (3x3 kernel, stride 2) of a 4x4 image.
using System;
using Deconv;

static class Example
{
    static int Main()
    {
        try
        {
            var p = new DeconvParams
            {
                Rank = 2, Batch = 1, InChannels = 1, OutChannels = 1,
                InSize = new long[] { 4, 4 }, Kernel = new long[] { 3, 3 }, Stride = new long[] { 2, 2 },
            };
            using (var d = new Deconvolution(p))
            {
                var src = new float[d.SrcSize];
                var weights = new float[d.WeightsSize];
                var bias = new float[d.BiasSize];
                var dst = new float[d.DstSize];
                for (int i = 0; i < src.Length; i++) src[i] = 1f;
                for (int i = 0; i < weights.Length; i++) weights[i] = 1f;
                bias[0] = 0.5f;
                d.Forward(src, weights, bias, dst);
                long[] shape = d.OutputShape; // 9 x 9
                Console.WriteLine("output {0}x{1}, dst[0] = {2}, center = {3}, impl {4}", shape[0],
                                  shape[1], dst[0], dst[4 * shape[1] + 4], d.ImplName(Pass.Forward));
            }
            return 0;
        }
        catch (DeconvException e)
        {
            Console.Error.WriteLine("deconv failed ({0}): {1}", e.Status, e.Message);
            return 1;
        }
    }
}
