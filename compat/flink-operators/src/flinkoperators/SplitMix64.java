package flinkoperators;

/** The README's input generator: SplitMix64 (state += golden gamma, then two xor-shift-multiply rounds). */
final class SplitMix64 {
    private long state;

    SplitMix64(long seed) {
        this.state = seed;
    }

    long next() {
        state += 0x9E3779B97F4A7C15L;
        long z = state;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Uniform in [0, n) (n > 0), by unsigned remainder. */
    int below(int n) {
        return (int) Long.remainderUnsigned(next(), n);
    }

    /** Uniform in [lo, hi] inclusive. */
    long range(long lo, long hi) {
        return lo + Long.remainderUnsigned(next(), hi - lo + 1);
    }

    /** True with probability pct / 100. */
    boolean chance(int pct) {
        return below(100) < pct;
    }

    <T> T pick(T[] choices) {
        return choices[below(choices.length)];
    }
}
