using System;
using Deconv;

// Run with Deconv.dll but no reachable libdeconv_csharp.so (or a broken one): every entry point
// must raise DeconvException with the loader's message. Usage: MissingNative.exe FRAGMENT...
// (each FRAGMENT must appear in the message). Exit code 0 when all holds.
static class MissingNative
{
    static int Main(string[] fragments)
    {
        int failures = 0;
        Action[] entryPoints = {
            () => new DeconvParams(),
            () => new DeconvParams(), // the second attempt must give the same clear error
            () => { var v = DeconvLibrary.Version; },
            () => DeconvLibrary.F32ToBf16(new float[1]),
        };
        foreach (var call in entryPoints)
        {
            try
            {
                call();
                Console.Error.WriteLine("FAIL: no exception");
                failures++;
            }
            catch (DeconvException e)
            {
                if (call == entryPoints[0]) Console.WriteLine(e.Message);
                if (e.Status != Status.Unsupported) { Console.Error.WriteLine("FAIL: status " + e.Status); failures++; }
                foreach (var f in fragments)
                    if (!e.Message.Contains(f)) { Console.Error.WriteLine("FAIL: message lacks '" + f + "'"); failures++; }
            }
            catch (Exception e)
            {
                Console.Error.WriteLine("FAIL: " + e);
                failures++;
            }
        }
        return failures == 0 ? 0 : 1;
    }
}
