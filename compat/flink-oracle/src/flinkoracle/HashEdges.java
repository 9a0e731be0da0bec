package flinkoracle;

/**
 * Input picking only: finds the one INT/BIGINT key whose single-field row has a wanted {@code
 * BinaryRowData.hashCode()}, by running murmur3 (seed 42, 4-byte words) backwards over the one
 * unknown word. The hash written to the vectors is always Flink's own {@code hashCode()}; the
 * caller checks that it equals the target.
 */
final class HashEdges {
    private HashEdges() {}

    private static final int C1 = 0xcc9e2d51;
    private static final int C2 = 0x1b873593;
    private static final int E = 0xe6546b64;
    private static final int SEED = 42;

    /** Multiplicative inverse of an odd int modulo 2^32 (Newton iteration). */
    static int inverse(int a) {
        int x = a;
        for (int i = 0; i < 5; i++) {
            x *= 2 - a * x;
        }
        return x;
    }

    private static int k(int word) {
        return Integer.rotateLeft(word * C1, 15) * C2;
    }

    private static int word(int k) {
        return Integer.rotateRight(k * inverse(C2), 15) * inverse(C1);
    }

    private static int mix(int h, int k) {
        return Integer.rotateLeft(h ^ k, 13) * 5 + E;
    }

    /** h such that mix(h, k) == out. */
    private static int unmix(int out, int k) {
        return Integer.rotateRight((out - E) * inverse(5), 13) ^ k;
    }

    private static int fmixInverse(int h) {
        h ^= h >>> 16;
        h *= inverse(0xc2b2ae35);
        h ^= (h >>> 13) ^ (h >>> 26);
        h *= inverse(0x85ebca6b);
        h ^= h >>> 16;
        return h;
    }

    /**
     * The value of words[unknown] that makes the hash of the words (little-endian 4-byte words,
     * byte length words.length*4) equal target.
     */
    static int solve(int target, int[] words, int unknown) {
        int h = fmixInverse(target) ^ (words.length * 4);
        for (int i = words.length - 1; i > unknown; i--) {
            h = unmix(h, k(words[i]));
        }
        int before = SEED;
        for (int i = 0; i < unknown; i++) {
            before = mix(before, k(words[i]));
        }
        // mix(before, k) == h  =>  k = unmix(h, 0) ^ before
        int kk = unmix(h, 0) ^ before;
        return word(kk);
    }

    /** INT key x with row [x] (16 bytes: header word, null bits, slot low, slot high). */
    static int intKeyFor(int target) {
        return solve(target, new int[] {0, 0, 0, 0}, 2);
    }

    /** BIGINT key with the given high word. */
    static long longKeyFor(int target, int highWord) {
        int low = solve(target, new int[] {0, 0, 0, highWord}, 2);
        return ((long) highWord << 32) | (low & 0xffffffffL);
    }
}
