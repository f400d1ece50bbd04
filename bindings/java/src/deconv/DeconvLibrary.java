package deconv;

/** Process-wide facts and settings of the loaded libdeconv: version, bf16 support, primitive cache. */
public final class DeconvLibrary {
    private DeconvLibrary() {
    }

    /** DECONV_VERSION of the library actually loaded: MAJOR * 10000 + MINOR * 100 + PATCH. */
    public static int version() {
        NativeLoader.load();
        return (int) DeconvNative.deconv_version();
    }

    /** "MAJOR.MINOR.PATCH" of the library actually loaded. */
    public static String versionString() {
        int v = version();
        return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
    }

    /** True: every CPU runs BF16 problems (in f32 on converted copies where oneDNN has no bf16 kernels). */
    public static boolean bf16Supported() {
        NativeLoader.load();
        return DeconvNative.deconv_bf16_supported() != 0;
    }

    /** The capacity of the primitive cache, in entries (default 64 or DECONV_CACHE_CAPACITY). */
    public static long cacheCapacity() {
        NativeLoader.load();
        return DeconvNative.deconv_cache_capacity();
    }

    /** Sets the capacity; 0 disables caching, shrinking evicts at once. */
    public static void setCacheCapacity(long capacity) {
        if (capacity < 0) throw DeconvException.invalid("capacity: " + capacity + " is negative");
        NativeLoader.load();
        DeconvException.check(DeconvNative.deconv_cache_set_capacity(capacity));
    }

    public static CacheStats cacheStats() {
        NativeLoader.load();
        long[] hits = {0}, misses = {0}, entries = {0};
        DeconvException.check(DeconvNative.deconv_cache_stats(hits, misses, entries));
        return new CacheStats(hits[0], misses[0], entries[0]);
    }

    /** Drops every entry and zeroes the hit and miss counters. */
    public static void clearCache() {
        NativeLoader.load();
        DeconvException.check(DeconvNative.deconv_cache_clear());
    }
}
