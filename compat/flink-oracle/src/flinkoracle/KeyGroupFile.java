package flinkoracle;

import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.util.MathUtils;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/** keygroup_math.jsonl: KeyGroupRangeAssignment, five record kinds. */
final class KeyGroupFile {
    private KeyGroupFile() {}

    static final String NAME = "keygroup_math.jsonl";

    static String error(Throwable e) {
        return e.getClass().getName() + ": " + e.getMessage();
    }

    static String defaultMaxParallelism(int p) {
        Integer v = null;
        String err = null;
        try {
            v = KeyGroupRangeAssignment.computeDefaultMaxParallelism(p);
        } catch (RuntimeException e) {
            err = error(e);
        }
        return new Json.Obj()
                .put("kind", "default_max_parallelism")
                .put("parallelism", p)
                .put("default_max_parallelism", v)
                .put("error", err)
                .toString();
    }

    static String range(int mp, int p, int index) {
        KeyGroupRange r = null;
        String err = null;
        try {
            r = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(mp, p, index);
        } catch (RuntimeException e) {
            err = error(e);
        }
        return new Json.Obj()
                .put("kind", "range")
                .put("max_parallelism", mp)
                .put("parallelism", p)
                .put("operator_index", index)
                .put("start", r == null ? null : r.getStartKeyGroup())
                .put("end", r == null ? null : r.getEndKeyGroup())
                .put("number_of_key_groups", r == null ? null : r.getNumberOfKeyGroups())
                .put("error", err)
                .toString();
    }

    static String operatorIndex(int mp, int p, int keyGroup) {
        return new Json.Obj()
                .put("kind", "operator_index")
                .put("max_parallelism", mp)
                .put("parallelism", p)
                .put("key_group", keyGroup)
                .put(
                        "operator_index",
                        KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(mp, p, keyGroup))
                .toString();
    }

    static String keyHash(int hash, int mp) {
        return new Json.Obj()
                .put("kind", "key_hash")
                .put("key_hash", hash)
                .put("max_parallelism", mp)
                .put("key_group", KeyGroupRangeAssignment.computeKeyGroupForKeyHash(hash, mp))
                .toString();
    }

    static String key(Object key, int mp, int p) {
        String type = key.getClass().getSimpleName(); // Integer, Long, String
        int h = key.hashCode();
        return new Json.Obj()
                .put("kind", "key")
                .put("key_type", type)
                .put("key", key)
                .put("java_hash_code", h)
                .put("murmur", MathUtils.murmurHash(h))
                .put("max_parallelism", mp)
                .put("key_group", KeyGroupRangeAssignment.assignToKeyGroup(key, mp))
                .put("parallelism", p)
                .put("operator_index", KeyGroupRangeAssignment.assignKeyToParallelOperator(key, mp, p))
                .toString();
    }

    private static int i(Map<String, Object> in, String k) {
        return ((Json.Num) in.get(k)).asInt();
    }

    static String replay(Map<String, Object> in) {
        switch ((String) in.get("kind")) {
            case "default_max_parallelism":
                return defaultMaxParallelism(i(in, "parallelism"));
            case "range":
                return range(i(in, "max_parallelism"), i(in, "parallelism"), i(in, "operator_index"));
            case "operator_index":
                return operatorIndex(i(in, "max_parallelism"), i(in, "parallelism"), i(in, "key_group"));
            case "key_hash":
                return keyHash(i(in, "key_hash"), i(in, "max_parallelism"));
            case "key":
                {
                    Object k;
                    switch ((String) in.get("key_type")) {
                        case "Integer":
                            k = ((Json.Num) in.get("key")).asInt();
                            break;
                        case "Long":
                            k = ((Json.Num) in.get("key")).asLong();
                            break;
                        case "String":
                            k = (String) in.get("key");
                            break;
                        default:
                            throw new IllegalArgumentException("unknown key_type");
                    }
                    return key(k, i(in, "max_parallelism"), i(in, "parallelism"));
                }
            default:
                throw new IllegalArgumentException("unknown kind " + in.get("kind"));
        }
    }

    static List<String> generate(Ctx ctx) {
        SplitMix64 r = ctx.rng("keygroup_math");
        boolean ext = ctx.extended;
        List<String> out = new ArrayList<>();

        // default_max_parallelism: next to every p where p + p/2 crosses a power of two
        TreeSet<Integer> ps = new TreeSet<>();
        for (int p = 1; p <= 12; p++) {
            ps.add(p);
        }
        ps.add(42);
        ps.add(100);
        ps.add(1000);
        ps.add(32767);
        ps.add(32768);
        for (int pow = 128; pow <= 65536; pow <<= 1) {
            for (int p = 1; p <= 50000; p++) {
                int x = p + p / 2;
                if (x >= pow - 3 && x <= pow + 2) {
                    ps.add(p);
                }
            }
        }
        for (int p : ps) {
            out.add(defaultMaxParallelism(p));
        }
        if (ext) {
            int[] invalid = {0, -1, -2, -128, 32769, 32770, 65536, Integer.MAX_VALUE,
                Integer.MIN_VALUE, Integer.MIN_VALUE + 1, 1_000_000};
            for (int p : invalid) {
                out.add(defaultMaxParallelism(p));
            }
        }

        // range + operator_index
        int[] mps = ext
                ? new int[] {1, 2, 7, 128, 129, 256, 1000, 4096, 10000, 32767, 32768}
                : new int[] {1, 2, 7, 128, 129, 256, 1000, 4096, 32768};
        int[] basePs = {1, 2, 3, 5, 7, 10, 64, 100, 128};
        for (int mp : mps) {
            TreeSet<Integer> pset = new TreeSet<>();
            for (int p : basePs) {
                if (p <= mp) {
                    pset.add(p);
                }
            }
            if (mp > 1) {
                pset.add(mp - 1);
            }
            pset.add(mp);
            if (ext && mp > 3) {
                pset.add(r.rangeInt(1, mp));
            }
            for (int p : pset) {
                TreeSet<Integer> idx = new TreeSet<>();
                if (p <= 8) {
                    for (int i = 0; i < p; i++) {
                        idx.add(i);
                    }
                } else {
                    idx.add(0);
                    idx.add(1);
                    idx.add(p / 2);
                    idx.add(p - 2);
                    idx.add(p - 1);
                    for (int k = 0; k < 3; k++) {
                        idx.add(r.nextInt(p));
                    }
                }
                for (int i : idx) {
                    out.add(range(mp, p, i));
                }
                TreeSet<Integer> kgs = new TreeSet<>();
                kgs.add(0);
                kgs.add(mp - 1);
                for (int k = 0; k < 3; k++) {
                    kgs.add(r.nextInt(mp));
                }
                // range boundaries of one random operator
                KeyGroupRange kr =
                        KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                                mp, p, r.nextInt(p));
                kgs.add(kr.getStartKeyGroup());
                kgs.add(kr.getEndKeyGroup());
                for (int kg : kgs) {
                    out.add(operatorIndex(mp, p, kg));
                }
            }
        }
        int[][] bad = {{0, 1, 0}, {32769, 1, 0}, {128, 129, 0}, {128, 0, 0}};
        for (int[] b : bad) {
            out.add(range(b[0], b[1], b[2]));
        }
        if (ext) {
            int[][] more = {
                {-1, 1, 0}, {Integer.MIN_VALUE, 1, 0}, {Integer.MAX_VALUE, 1, 0}, {128, -1, 0},
                {128, Integer.MIN_VALUE, 0}, {32768, 32769, 0}, {1, 2, 0}, {128, 4, -1},
                {128, 4, Integer.MIN_VALUE}, {128, 4, 4}, {128, 4, 100}, {32768, 1, 1},
                {32768, 3, Integer.MAX_VALUE}, {32768, 32768, 65536}, {7, 3, 3},
            };
            for (int[] b : more) {
                out.add(range(b[0], b[1], b[2]));
            }
        }

        // key_hash
        List<Integer> hashes = new ArrayList<>(SimpleFiles.edgeInts().subList(0, 21));
        int randomHashes = ext ? 60 : 10;
        for (int k = 0; k < randomHashes; k++) {
            hashes.add(r.nextInt());
        }
        int[] hashMps = ext ? new int[] {1, 2, 128, 129, 256, 4096, 32768} : new int[] {128, 129, 4096, 32768};
        for (int h : hashes) {
            for (int mp : hashMps) {
                out.add(keyHash(h, mp));
            }
        }

        // key: Integer / Long / String keys
        List<Object> keys = new ArrayList<>();
        keys.addAll(SimpleFiles.edgeInts().subList(0, 21));
        for (long v : RocksDbKeysFile.LONG_KEYS) {
            keys.add(v);
        }
        for (String s : RocksDbKeysFile.STRING_KEYS) {
            keys.add(s);
        }
        int randomTriples = ext ? 40 : 8;
        for (int k = 0; k < randomTriples; k++) {
            keys.add(r.nextInt());
            keys.add(r.nextLong());
            keys.add(SqlValues.randomString(r, r.nextInt(20), ext));
        }
        int[] keyMps = ext ? new int[] {1, 128, 129, 4096, 32768} : new int[] {128, 129, 4096, 32768};
        for (Object k : keys) {
            for (int mp : keyMps) {
                int p = r.rangeInt(1, Math.min(mp, 300));
                out.add(key(k, mp, p));
            }
        }
        return out;
    }
}
