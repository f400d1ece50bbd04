package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.CacheStats;
import deconv.DeconvLibrary;
import deconv.Deconvolution;
import deconv.NativeProbe;
import org.junit.jupiter.api.Test;

/** Version and the process-wide primitive cache. */
class LibraryTest {
    @Test
    void versionOfTheLoadedLibraryMatchesTheHeader() {
        int v = NativeProbe.headerVersion();
        assertEquals(v, DeconvLibrary.version());
        assertEquals(v / 10000 + "." + v / 100 % 100 + "." + v % 100, DeconvLibrary.versionString());
    }

    @Test
    void cacheCountsHitsAndMisses() {
        long capacity = DeconvLibrary.cacheCapacity();
        try {
            DeconvLibrary.setCacheCapacity(8);
            assertEquals(8, DeconvLibrary.cacheCapacity());
            DeconvLibrary.clearCache();
            CacheStats zero = DeconvLibrary.cacheStats();
            assertEquals(0, zero.hits());
            assertEquals(0, zero.misses());
            assertEquals(0, zero.entries());
            new Deconvolution(ErrorsTest.small()).close();
            new Deconvolution(ErrorsTest.small()).close();
            CacheStats s = DeconvLibrary.cacheStats();
            assertTrue(s.misses() >= 1 && s.hits() >= 1 && s.entries() >= 1, s.toString());
            ErrorsTest.fails(deconv.Status.INVALID_ARGUMENT, "capacity", () -> DeconvLibrary.setCacheCapacity(-1));
        } finally {
            DeconvLibrary.setCacheCapacity(capacity);
        }
    }
}
