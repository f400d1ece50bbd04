package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.DeconvParams;
import java.io.File;
import java.lang.reflect.Modifier;
import java.util.Enumeration;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * deconv.jar's public surface is the hand-written API only: SWIG's classes (DeconvNative, its JNI
 * class, the struct proxies, the type wrappers, the enum constant classes) are package-private.
 */
class PublicApiTest {
    private static final Set<String> HAND_WRITTEN = new TreeSet<>(Set.of(
            "deconv.Bf16", "deconv.CacheStats", "deconv.DType", "deconv.DeconvException", "deconv.DeconvLibrary",
            "deconv.DeconvParams", "deconv.Deconvolution", "deconv.Layout", "deconv.Mode", "deconv.NativeLoader",
            "deconv.Pass", "deconv.Req", "deconv.Status"));

    @Test
    void onlyTheHandWrittenClassesArePublic() throws Exception {
        File jar = new File(DeconvParams.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Set<String> all = new TreeSet<>(), exported = new TreeSet<>();
        try (JarFile f = new JarFile(jar)) {
            for (Enumeration<JarEntry> e = f.entries(); e.hasMoreElements();) {
                String name = e.nextElement().getName();
                if (!name.endsWith(".class")) continue;
                String className = name.substring(0, name.length() - ".class".length()).replace('/', '.');
                all.add(className);
                // Not initialized: loading the classes must not need the native library.
                Class<?> c = Class.forName(className, false, DeconvParams.class.getClassLoader());
                if (isReachable(c)) exported.add(className);
            }
        }
        // The jar looked at is the one with SWIG's layer in it.
        assertTrue(all.contains("deconv.DeconvNative") && all.contains("deconv.deconv_params"), all.toString());
        assertEquals(HAND_WRITTEN, exported, "public classes of " + jar);
    }

    /** Public, and (for a nested class) inside a public class all the way out. */
    private static boolean isReachable(Class<?> c) {
        for (; c != null; c = c.getEnclosingClass())
            if (!Modifier.isPublic(c.getModifiers())) return false;
        return true;
    }
}
