package flinkoracle;

/**
 * The splitmix64 generator of the vector README, used to pick every random input and to expand
 * the {@code prng} lines of crc32c.jsonl. Only inputs come from here, never outputs.
 */
public final class SplitMix64 {
    private long state;

    public SplitMix64(long seed) {
        this.state = seed;
    }

    /** An independent stream for one purpose ("murmur", "binary_rows", ...) of one run seed. */
    public static SplitMix64 stream(long runSeed, String purpose) {
        long s = runSeed;
        for (int i = 0; i < purpose.length(); i++) {
            s = mix(s ^ purpose.charAt(i));
        }
        return new SplitMix64(s);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public long nextLong() {
        state += 0x9E3779B97F4A7C15L;
        return mix(state);
    }

    public int nextInt() {
        return (int) (nextLong() >>> 32);
    }

    /** Uniform-ish in [0, bound); bound > 0. */
    public int nextInt(int bound) {
        if (bound <= 0) {
            throw new IllegalArgumentException("bound " + bound);
        }
        return (int) Long.remainderUnsigned(nextLong(), bound);
    }

    /** Uniform-ish in [lo, hi] (inclusive). */
    public long range(long lo, long hi) {
        long span = hi - lo + 1;
        if (span <= 0) {
            return lo + nextLong(); // full range
        }
        return lo + Long.remainderUnsigned(nextLong(), span);
    }

    public int rangeInt(int lo, int hi) {
        return (int) range(lo, hi);
    }

    public boolean nextBoolean() {
        return (nextLong() & 1) != 0;
    }

    /** True with probability num/den. */
    public boolean chance(int num, int den) {
        return nextInt(den) < num;
    }

    public <T> T pick(T[] a) {
        return a[nextInt(a.length)];
    }

    public <T> T pick(java.util.List<T> a) {
        return a.get(nextInt(a.size()));
    }

    public long pick(long[] a) {
        return a[nextInt(a.length)];
    }

    public int pick(int[] a) {
        return a[nextInt(a.length)];
    }

    /** {@code len} bytes: each output gives 8 bytes little-endian; the last one may be cut short. */
    public byte[] bytes(int len) {
        byte[] out = new byte[len];
        int i = 0;
        while (i < len) {
            long z = nextLong();
            for (int b = 0; b < 8 && i < len; b++, i++) {
                out[i] = (byte) (z >>> (8 * b));
            }
        }
        return out;
    }
}
