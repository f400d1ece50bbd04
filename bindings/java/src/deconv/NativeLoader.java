package deconv;

import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI glue library {@code libdeconv_java.so} (which itself needs libdeconv.so.0, found
 * through its RPATH) the first time any class of the binding is used. It tries, in order:
 * <ol>
 *   <li>the file named by the system property {@value #LIBRARY_PATH_PROPERTY} (a full path);
 *   <li>{@code libdeconv_java.so} in the folder of the jar this class was loaded from (the
 *       installed layout: {@code <prefix>/lib/deconv/deconv.jar} next to
 *       {@code <prefix>/lib/deconv/libdeconv_java.so});
 *   <li>{@code System.loadLibrary("deconv_java")}, i.e. {@code java.library.path}.
 * </ol>
 * When all fail it throws {@link UnsatisfiedLinkError} (the JDK's error for a native library that
 * cannot be loaded) whose message lists each attempt and why it failed. The outcome is kept: a
 * later call throws the same error again, because the JVM cannot retry the binding's native
 * classes once their initialization failed.
 */
public final class NativeLoader {
    /** System property naming the full path of libdeconv_java.so. */
    public static final String LIBRARY_PATH_PROPERTY = "deconv.library.path";
    /** File name of the glue library. */
    public static final String LIBRARY_FILE = "libdeconv_java.so";

    private static boolean loaded;
    private static String failure;

    private NativeLoader() {
    }

    /** Loads the library unless done; throws UnsatisfiedLinkError listing every attempt. */
    public static synchronized void load() {
        if (loaded) return;
        if (failure != null) throw new UnsatisfiedLinkError(failure);
        List<String> attempts = new ArrayList<>();

        String property = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (property == null || property.isEmpty())
            attempts.add("system property " + LIBRARY_PATH_PROPERTY + ": not set");
        else if (loadFile(new File(property), "system property " + LIBRARY_PATH_PROPERTY + " = ", attempts))
            return;

        File folder = jarFolder(attempts);
        if (folder != null && loadFile(new File(folder, LIBRARY_FILE), "next to the jar: ", attempts)) return;

        try {
            System.loadLibrary("deconv_java");
            loaded = true;
            return;
        } catch (UnsatisfiedLinkError | SecurityException e) {
            // The JDK's message names java.library.path.
            attempts.add("System.loadLibrary(\"deconv_java\"): " + e.getMessage());
        }

        StringBuilder message = new StringBuilder("libdeconv: cannot load the native library "
                + LIBRARY_FILE + "; tried, in order:");
        for (int i = 0; i < attempts.size(); i++)
            message.append("\n  ").append(i + 1).append(". ").append(attempts.get(i));
        message.append("\nSet -D" + LIBRARY_PATH_PROPERTY + "=/full/path/to/" + LIBRARY_FILE
                + ", or keep the jar next to it (as installed in <prefix>/lib/deconv).");
        failure = message.toString();
        throw new UnsatisfiedLinkError(failure);
    }

    private static boolean loadFile(File file, String what, List<String> attempts) {
        String where = what + file.getPath();
        if (!file.isFile()) {
            attempts.add(where + ": no such file");
            return false;
        }
        try {
            System.load(file.getAbsolutePath());
            loaded = true;
            return true;
        } catch (UnsatisfiedLinkError | SecurityException e) {
            // Typically a dependency (libdeconv.so.0, oneDNN) that the dynamic loader cannot find.
            attempts.add(where + ": " + e.getMessage());
            return false;
        }
    }

    private static File jarFolder(List<String> attempts) {
        CodeSource source = NativeLoader.class.getProtectionDomain().getCodeSource();
        URL location = source == null ? null : source.getLocation();
        if (location == null) {
            attempts.add("next to the jar: the location of the deconv classes is unknown");
            return null;
        }
        File file;
        try {
            file = new File(location.toURI());
        } catch (URISyntaxException | IllegalArgumentException e) {
            attempts.add("next to the jar: " + location + " is not a local file");
            return null;
        }
        if (!file.isFile()) {
            attempts.add("next to the jar: classes loaded from " + file + ", not from a jar");
            return null;
        }
        return file.getAbsoluteFile().getParentFile();
    }
}
