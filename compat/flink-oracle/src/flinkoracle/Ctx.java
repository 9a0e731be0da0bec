package flinkoracle;

/** One generation run: profile name, seed and whether the extended (hidden-set-like) inputs are added. */
public final class Ctx {
    public final String profile;
    public final long seed;
    public final boolean extended;

    public Ctx(String profile, long seed, boolean extended) {
        this.profile = profile;
        this.seed = seed;
        this.extended = extended;
    }

    /** Id prefix: the profile's first letter, upper case ("public" gives "P0000", "P-rk0000"). */
    public String prefix() {
        return profile.substring(0, 1).toUpperCase(java.util.Locale.ROOT);
    }

    public SplitMix64 rng(String purpose) {
        return SplitMix64.stream(seed, purpose);
    }
}
