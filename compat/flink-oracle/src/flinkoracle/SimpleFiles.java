package flinkoracle;

import org.apache.flink.util.MathUtils;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/** murmur.jsonl, crc32c.jsonl and memory_formulas.jsonl. */
final class SimpleFiles {
    private SimpleFiles() {}

    // ================================================================== murmur.jsonl

    static final String MURMUR = "murmur.jsonl";

    /** Edge ints in the order of the public set: small values, MIN/MAX, the zero-result inputs,
     * the murmur constants, then powers of two with their neighbours. */
    static List<Integer> edgeInts() {
        Set<Integer> s = new LinkedHashSet<>();
        int[] first = {
            0, 1, -1, 2, 42, 127, 128, 255, 256, 32768, Integer.MIN_VALUE, Integer.MAX_VALUE,
            Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1, -2089875627, -1035494534, 0xcc9e2d51,
            0x1b873593, 0xe6546b64, 0x85ebca6b, 0xc2b2ae35,
        };
        for (int v : first) {
            s.add(v);
        }
        for (int k = 1; k <= 30; k++) {
            s.add(1 << k);
            s.add((1 << k) - 1);
            s.add(-(1 << k));
        }
        s.add("polygenelubricants".hashCode());
        return new ArrayList<>(s);
    }

    static String murmurLine(int code) {
        return new Json.Obj().put("code", code).put("murmur", MathUtils.murmurHash(code)).toString();
    }

    static String murmurReplay(Map<String, Object> in) {
        return murmurLine(((Json.Num) in.get("code")).asInt());
    }

    static List<String> murmur(Ctx ctx) {
        SplitMix64 r = ctx.rng("murmur");
        List<String> out = new ArrayList<>();
        for (int v : edgeInts()) {
            out.add(murmurLine(v));
        }
        int total = ctx.extended ? 1000 : 300;
        while (out.size() < total) {
            out.add(murmurLine(r.nextInt()));
        }
        return out;
    }

    // ================================================================== crc32c.jsonl

    static final String CRC = "crc32c.jsonl";

    static long crc32c(byte[] data) {
        CRC32C c = new CRC32C();
        c.update(data);
        return c.getValue();
    }

    static String crcInline(String id, byte[] data) {
        return new Json.Obj()
                .put("id", id)
                .put("len", data.length)
                .put("data_hex", Hex.encode(data))
                .put("prng", null)
                .put("crc32c", crc32c(data))
                .toString();
    }

    static String crcPrng(String id, long seed, int len) {
        byte[] data = new SplitMix64(seed).bytes(len);
        byte[] first = java.util.Arrays.copyOf(data, Math.min(16, len));
        return new Json.Obj()
                .put("id", id)
                .put("len", len)
                .put("data_hex", null)
                .put(
                        "prng",
                        new Json.Obj()
                                .put("algo", "splitmix64")
                                .put("seed", String.format("0x%016x", seed))
                                .put("first_16_bytes_hex", Hex.encode(first)))
                .put("crc32c", crc32c(data))
                .toString();
    }

    @SuppressWarnings("unchecked")
    static String crcReplay(Map<String, Object> in) {
        String id = (String) in.get("id");
        int len = ((Json.Num) in.get("len")).asInt();
        if (in.get("data_hex") != null) {
            return crcInline(id, Hex.decode((String) in.get("data_hex")));
        }
        Map<String, Object> p = (Map<String, Object>) in.get("prng");
        if (!"splitmix64".equals(p.get("algo"))) {
            throw new IllegalArgumentException("unknown prng " + p.get("algo"));
        }
        String seed = (String) p.get("seed");
        return crcPrng(id, Long.parseUnsignedLong(seed.substring(2), 16), len);
    }

    static List<String> crc(Ctx ctx) {
        SplitMix64 r = ctx.rng("crc32c");
        List<String> out = new ArrayList<>();
        java.util.function.Supplier<String> id = () -> String.format("crc%04d", out.size());
        for (int len = 0; len <= 40; len++) {
            out.add(crcInline(id.get(), r.bytes(len)));
        }
        out.add(crcInline(id.get(), new byte[32]));
        byte[] ff = new byte[32];
        java.util.Arrays.fill(ff, (byte) 0xff);
        out.add(crcInline(id.get(), ff));
        out.add(
                crcInline(
                        id.get(),
                        "123456789".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
        int randomCount = ctx.extended ? 120 : 30;
        int maxLen = ctx.extended ? 4100 : 600;
        for (int i = 0; i < randomCount; i++) {
            out.add(crcInline(id.get(), r.bytes(r.rangeInt(1, maxLen))));
        }
        // large inputs, regenerated from the splitmix64 generator
        long runSeed = (ctx.seed & ~0xffffL) | 1;
        out.add(crcPrng(id.get(), runSeed, 1 << 20));
        out.add(crcPrng(id.get(), 0, 64));
        out.add(crcPrng(id.get(), 42, 100_000));
        if (ctx.extended) {
            out.add(crcPrng(id.get(), runSeed + 1, 1));
            out.add(crcPrng(id.get(), runSeed + 2, 7));
            out.add(crcPrng(id.get(), runSeed + 3, 4095));
            out.add(crcPrng(id.get(), runSeed + 4, 65_543));
            out.add(crcPrng(id.get(), -1L, 3 * (1 << 20) + 5));
        }
        return out;
    }

    // ================================================================== memory_formulas.jsonl

    static final String MEMORY = "memory_formulas.jsonl";

    private static final String UTILS = "org.apache.flink.state.rocksdb.RocksDBMemoryControllerUtils";

    private static Object call(String name, Class<?>[] sig, Object... args) {
        try {
            Method m = Class.forName(UTILS).getDeclaredMethod(name, sig);
            m.setAccessible(true);
            return m.invoke(null, args);
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException("calling " + name, e);
        }
    }

    private static final Class<?>[] LD = {long.class, double.class};
    private static final Class<?>[] L = {long.class};
    private static final Class<?>[] LL = {long.class, long.class};

    static String sharedResources(long total, double ratio) {
        return new Json.Obj()
                .put("kind", "shared_resources")
                .put("total_memory", total)
                .put(
                        "write_buffer_ratio_bits",
                        String.format("%016x", Double.doubleToRawLongBits(ratio)))
                .put("write_buffer_ratio", new Json.Raw(Double.toString(ratio)))
                .put("cache_capacity", call("calculateActualCacheCapacity", LD, total, ratio))
                .put(
                        "write_buffer_manager_capacity",
                        call("calculateWriteBufferManagerCapacity", LD, total, ratio))
                .toString();
    }

    static String writeBuffer(long size) {
        return new Json.Obj()
                .put("kind", "write_buffer")
                .put("write_buffer_size", size)
                .put(
                        "default_arena_block_size",
                        call("calculateRocksDBDefaultArenaBlockSize", L, size))
                .put("mutable_limit", call("calculateRocksDBMutableLimit", L, size))
                .toString();
    }

    static String validateArena(long arena, long limit) {
        return new Json.Obj()
                .put("kind", "validate_arena_block_size")
                .put("arena_block_size", arena)
                .put("mutable_limit", limit)
                .put("valid", call("validateArenaBlockSize", LL, arena, limit))
                .toString();
    }

    static String memoryReplay(Map<String, Object> in) {
        switch ((String) in.get("kind")) {
            case "shared_resources":
                {
                    long bits = Long.parseUnsignedLong((String) in.get("write_buffer_ratio_bits"), 16);
                    return sharedResources(
                            ((Json.Num) in.get("total_memory")).asLong(),
                            Double.longBitsToDouble(bits));
                }
            case "write_buffer":
                return writeBuffer(((Json.Num) in.get("write_buffer_size")).asLong());
            case "validate_arena_block_size":
                return validateArena(
                        ((Json.Num) in.get("arena_block_size")).asLong(),
                        ((Json.Num) in.get("mutable_limit")).asLong());
            default:
                throw new IllegalArgumentException("unknown kind " + in.get("kind"));
        }
    }

    static final long[] TOTALS = {
        0, 1, 3, 1023, 4096, 64L << 20, 128L << 20, 256L << 20, 512L << 20, 1L << 30,
        (1L << 30) + 7, 3L << 30, 10L << 30, 1L << 40, (1L << 61) - 1,
    };
    static final double[] RATIOS = {0.0, 0.1, 0.25, 0.333, 0.5, 0.6, 0.75, 0.9, 0.999};
    static final long[] EXTENDED_TOTALS = {
        2, 7, (1L << 53) + 1, (1L << 62) - 1, Long.MAX_VALUE / 3, 123_456_789_012L,
    };
    static final double[] EXTENDED_RATIOS = {
        1.0, Double.MIN_VALUE, 1e-9, 0.3333333333333333, 0.9999999999999999, 0.01, 2.0 / 3,
    };
    static final long[] WRITE_BUFFER_SIZES = {
        0, 1, 8, 4095, 4096, 32767, 32768, 32769, 64L << 20, (64L << 20) + 1, 1L << 30,
        123_456_789,
    };

    static List<String> memory(Ctx ctx) {
        SplitMix64 r = ctx.rng("memory_formulas");
        boolean ext = ctx.extended;
        List<String> out = new ArrayList<>();
        List<Long> totals = new ArrayList<>();
        for (long t : TOTALS) {
            totals.add(t);
        }
        List<Double> ratios = new ArrayList<>();
        for (double d : RATIOS) {
            ratios.add(d);
        }
        if (ext) {
            for (long t : EXTENDED_TOTALS) {
                totals.add(t);
            }
            for (double d : EXTENDED_RATIOS) {
                ratios.add(d);
            }
        }
        for (long t : totals) {
            for (double d : ratios) {
                out.add(sharedResources(t, d));
            }
        }
        int n = ext ? 300 : 60;
        for (int i = 0; i < n; i++) {
            long total = r.range(0, (1L << 42) - 1);
            double ratio = (r.nextLong() >>> 11) * 0x1.0p-53;
            out.add(sharedResources(total, ratio));
        }
        for (long s : WRITE_BUFFER_SIZES) {
            out.add(writeBuffer(s));
        }
        if (ext) {
            long[] more = {7, 9, 32760, 32776, Long.MAX_VALUE / 8, (1L << 40) + 3};
            for (long s : more) {
                out.add(writeBuffer(s));
            }
        }
        for (int i = 0; i < n; i++) {
            out.add(writeBuffer(r.range(0, (1L << 36) - 1)));
        }
        if (ext) {
            long[][] edges = {{0, 0}, {1, 0}, {0, 1}, {4096, 4096}, {4097, 4096}, {4096, 4097}};
            for (long[] e : edges) {
                out.add(validateArena(e[0], e[1]));
            }
        }
        for (int i = 0; i < (ext ? 60 : 15); i++) {
            out.add(validateArena(r.range(0, (1L << 30) - 1), r.range(0, (1L << 30) - 1)));
        }
        return out;
    }
}
