package deconv.missing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.DeconvLibrary;
import deconv.DeconvParams;
import deconv.Deconvolution;
import java.io.File;
import org.junit.jupiter.api.Test;

/**
 * Run by the java_missing_native CTest entry only: deconv.jar alone in a folder, the system
 * property naming a missing file and java.library.path an empty folder. Loading must fail with
 * an UnsatisfiedLinkError listing the three attempts, every time, without crashing the JVM.
 */
class MissingNativeTest {
    @Test
    void loaderErrorListsEveryAttempt() {
        String property = System.getProperty("deconv.library.path");
        String jarFolder = new File(System.getProperty("deconv.test.jar.folder")).getAbsolutePath();
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> new Deconvolution(new DeconvParams()));
        String m = e.getMessage();
        assertTrue(m.contains("1. system property deconv.library.path = " + property + ": no such file"), m);
        assertTrue(m.contains("2. next to the jar: " + jarFolder + File.separator + "libdeconv_java.so: no such file"), m);
        assertTrue(m.contains("3. System.loadLibrary(\"deconv_java\")"), m);

        // The same clear error again, from any entry point (not NoClassDefFoundError).
        UnsatisfiedLinkError again = assertThrows(UnsatisfiedLinkError.class, DeconvLibrary::version);
        assertEquals(m, again.getMessage());
        assertEquals(m, assertThrows(UnsatisfiedLinkError.class, () -> new DeconvParams().outputShape()).getMessage());
    }
}
