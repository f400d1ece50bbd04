using System;
using System.IO;
using System.Runtime.InteropServices;

namespace Deconv
{
    /// <summary>
    /// Turns a missing or unloadable libdeconv_csharp.so into one DeconvException that says where
    /// it was looked for. Mono resolves DllImport("deconv_csharp") itself, in this order: the
    /// folder of Deconv.dll, Mono's own library folder, then the dynamic linker (LD_LIBRARY_PATH,
    /// ld.so.cache); a dllmap in Deconv.dll.config overrides it. Without this class the first call
    /// would surface as a TypeInitializationException of a generated internal class, and that
    /// class stays broken for the life of the process.
    /// </summary>
    internal static class NativeLoader
    {
        internal const string FileName = "libdeconv_csharp.so";

        private static readonly object Gate = new object();
        private static volatile bool loaded;
        private static string failure; // the message, once loading has failed
        private static Exception failureCause;

        /// <summary>Throws the load error unless the native library is usable.</summary>
        internal static void Ensure()
        {
            if (loaded) return;
            lock (Gate)
            {
                if (loaded) return;
                if (failure == null)
                {
                    try
                    {
                        DeconvNative.deconv_version();
                        loaded = true;
                        return;
                    }
                    catch (Exception e) when (IsLoadFailure(e))
                    {
                        failureCause = e;
                        failure = Describe(e);
                    }
                }
                // A new exception each time, so each caller gets its own stack trace.
                throw new DeconvException(Status.Unsupported, failure, failureCause);
            }
        }

        private static bool IsLoadFailure(Exception e)
        {
            for (; e != null; e = e.InnerException)
            {
                if (e is DllNotFoundException || e is EntryPointNotFoundException ||
                    e is BadImageFormatException)
                    return true;
                if (!(e is TypeInitializationException)) return false;
            }
            return false;
        }

        private static string Describe(Exception e)
        {
            Exception root = e;
            while (root.InnerException != null) root = root.InnerException;
            string assembly = typeof(NativeLoader).Assembly.Location;
            string folder = string.IsNullOrEmpty(assembly) ? null : Path.GetDirectoryName(assembly);
            string nextTo = folder == null ? "(Deconv.dll has no location)" : Path.Combine(folder, FileName);
            string ldPath = Environment.GetEnvironmentVariable("LD_LIBRARY_PATH");
            return string.Format(
                "Deconv: cannot load the native library {0} (DllImport \"deconv_csharp\"). Tried, in " +
                "Mono's order: {1} ({2}); Mono's library folder; {0} through the dynamic linker " +
                "(LD_LIBRARY_PATH={3}, then ld.so.cache and the system folders). The runtime said: " +
                "{4}: {5}. Install it next to Deconv.dll (`cmake --install` puts both in " +
                "<prefix>/lib/deconv) or add its folder to LD_LIBRARY_PATH.",
                FileName, nextTo, Diagnose(nextTo), string.IsNullOrEmpty(ldPath) ? "unset" : ldPath,
                root.GetType().Name, root.Message);
        }

        /// <summary>Why the copy next to the assembly did not load, as far as dlopen can tell;
        /// Mono's own message does not say (e.g. that libdeconv.so.0 is missing).</summary>
        private static string Diagnose(string path)
        {
            if (!File.Exists(path)) return "not found";
            try
            {
                IntPtr h = dlopen(path, RtldNow);
                if (h != IntPtr.Zero)
                {
                    dlclose(h);
                    return "exists and loads with dlopen";
                }
                IntPtr err = dlerror();
                return "exists but does not load: " +
                    (err == IntPtr.Zero ? "unknown dlopen error" : Marshal.PtrToStringAnsi(err));
            }
            catch (Exception) // no libdl here: the path alone must do
            {
                return "exists but does not load";
            }
        }

        private const int RtldNow = 2;
        [DllImport("libdl.so.2")] private static extern IntPtr dlopen(string file, int mode);
        [DllImport("libdl.so.2")] private static extern IntPtr dlerror();
        [DllImport("libdl.so.2")] private static extern int dlclose(IntPtr handle);
    }
}
