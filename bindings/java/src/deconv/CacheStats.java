package deconv;

/** A snapshot of the process-wide primitive cache's counters ({@link DeconvLibrary#cacheStats()}). */
public final class CacheStats {
    private final long hits, misses, entries;

    CacheStats(long hits, long misses, long entries) {
        this.hits = hits;
        this.misses = misses;
        this.entries = entries;
    }

    /** Handle creations that found their primitives in the cache. */
    public long hits() {
        return hits;
    }

    /** Handle creations that had to create primitives. */
    public long misses() {
        return misses;
    }

    /** Entries held now. */
    public long entries() {
        return entries;
    }

    @Override
    public String toString() {
        return "CacheStats{hits=" + hits + ", misses=" + misses + ", entries=" + entries + "}";
    }
}
