package flinkoracle;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.BinaryRowDataSerializer;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.types.RowKind;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** rocksdb_keys.jsonl: composite RocksDB state keys from SerializedCompositeKeyBuilder. */
final class RocksDbKeysFile {
    private RocksDbKeysFile() {}

    static final String NAME = "rocksdb_keys.jsonl";

    /** A key or map user key: serializer name, kind and value (internal objects for rows). */
    static final class KeySpec {
        final String serializer;
        final String kind; // row, int, long, string
        final Object value; // Integer, Long, String, or Object[] (row values)
        final List<String> rowTypes; // rows only

        KeySpec(String serializer, String kind, Object value, List<String> rowTypes) {
            this.serializer = serializer;
            this.kind = kind;
            this.value = value;
            this.rowTypes = rowTypes;
        }

        static KeySpec row(String serializer, List<String> types, Object[] values) {
            return new KeySpec(serializer, "row", values, types);
        }

        static KeySpec of(Object v) {
            if (v instanceof Integer) {
                return new KeySpec("IntSerializer", "int", v, null);
            }
            if (v instanceof Long) {
                return new KeySpec("LongSerializer", "long", v, null);
            }
            return new KeySpec("StringSerializer", "string", v, null);
        }

        LogicalType[] types() {
            return SqlValues.parseTypes(rowTypes);
        }

        /** The key object handed to Flink: for rows the key selector's BinaryRowData. */
        Object object() {
            if (kind.equals("row")) {
                return FlinkRows.viaKeySelector(types(), (Object[]) value, RowKind.INSERT);
            }
            return value;
        }

        @SuppressWarnings({"rawtypes"})
        TypeSerializer serializer() {
            switch (serializer) {
                case "RowDataSerializer":
                    // what Flink SQL keyed state uses: the InternalTypeInfo of the key row type
                    return InternalTypeInfo.ofFields(types()).toRowSerializer();
                case "BinaryRowDataSerializer":
                    return new BinaryRowDataSerializer(rowTypes.size());
                case "IntSerializer":
                    return IntSerializer.INSTANCE;
                case "LongSerializer":
                    return LongSerializer.INSTANCE;
                case "StringSerializer":
                    return StringSerializer.INSTANCE;
                default:
                    throw new IllegalArgumentException("unknown key serializer " + serializer);
            }
        }

        Object json() {
            if (kind.equals("row")) {
                return SqlValues.toJson(types(), (Object[]) value);
            }
            return value;
        }
    }

    /** A namespace: serializer name and value. */
    static final class NsSpec {
        final String serializer;
        final long start;
        final long end;
        final Object value; // Long or String for long/string namespaces

        NsSpec(String serializer, long start, long end, Object value) {
            this.serializer = serializer;
            this.start = start;
            this.end = end;
            this.value = value;
        }

        String kind() {
            switch (serializer) {
                case "VoidNamespaceSerializer":
                    return "void";
                case "TimeWindow.Serializer":
                case "table.TimeWindow.Serializer":
                    return "time_window";
                case "LongSerializer":
                    return "long";
                case "StringSerializer":
                    return "string";
                default:
                    throw new IllegalArgumentException("unknown namespace serializer " + serializer);
            }
        }

        Object object() {
            switch (serializer) {
                case "VoidNamespaceSerializer":
                    return VoidNamespace.INSTANCE;
                case "TimeWindow.Serializer":
                    return new org.apache.flink.streaming.api.windowing.windows.TimeWindow(
                            start, end);
                case "table.TimeWindow.Serializer":
                    return org.apache.flink.table.runtime.operators.window.TimeWindow.of(
                            start, end);
                default:
                    return value;
            }
        }

        @SuppressWarnings("rawtypes")
        TypeSerializer serializer() {
            switch (serializer) {
                case "VoidNamespaceSerializer":
                    return VoidNamespaceSerializer.INSTANCE;
                case "TimeWindow.Serializer":
                    return new org.apache.flink.streaming.api.windowing.windows.TimeWindow
                            .Serializer();
                case "table.TimeWindow.Serializer":
                    return new org.apache.flink.table.runtime.operators.window.TimeWindow
                            .Serializer();
                case "LongSerializer":
                    return LongSerializer.INSTANCE;
                case "StringSerializer":
                    return StringSerializer.INSTANCE;
                default:
                    throw new IllegalArgumentException("unknown namespace serializer " + serializer);
            }
        }

        Object json() {
            switch (kind()) {
                case "void":
                    return null;
                case "time_window":
                    return new Json.Obj().put("start", start).put("end", end);
                default:
                    return value;
            }
        }
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static byte[] serialize(TypeSerializer s, Object o) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(32);
        s.serialize(o, out);
        return out.getCopyOfBuffer();
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static Json.Obj line(
            String id, int mp, KeySpec key, String keyRowCase, NsSpec ns, KeySpec userKey)
            throws IOException {
        Object k = key.object();
        TypeSerializer keySer = key.serializer();
        Object n = ns.object();
        TypeSerializer nsSer = ns.serializer();
        int prefixBytes = CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(mp);
        int keyGroup = KeyGroupRangeAssignment.assignToKeyGroup(k, mp);
        boolean row = key.kind.equals("row");

        Object uk = userKey == null ? null : userKey.object();
        TypeSerializer ukSer = userKey == null ? null : userKey.serializer();
        boolean ukRow = userKey != null && userKey.kind.equals("row");

        SerializedCompositeKeyBuilder builder =
                new SerializedCompositeKeyBuilder(keySer, prefixBytes, 32);
        builder.setKeyAndKeyGroup(k, keyGroup);
        byte[] keyAndGroup = builder.build();
        byte[] withNs = builder.buildCompositeKeyNamespace(n, nsSer);
        byte[] withUk =
                userKey == null
                        ? null
                        : builder.buildCompositeKeyNamesSpaceUserKey(n, nsSer, uk, ukSer);

        return new Json.Obj()
                .put("id", id)
                .put("max_parallelism", mp)
                .put("key_group_prefix_bytes", prefixBytes)
                .put("key_group", keyGroup)
                .put("key_hash_code", k.hashCode())
                .put("key_serializer", key.serializer)
                .put("key_kind", key.kind)
                .put("key", key.json())
                .put("key_row_types", row ? new ArrayList<Object>(key.rowTypes) : null)
                .put("key_row_hex", row ? Hex.encode(FlinkRows.bytes((BinaryRowData) k)) : null)
                .put("key_serialized_hex", Hex.encode(serialize(keySer, k)))
                .put("key_row_case", keyRowCase)
                .put("namespace_serializer", ns.serializer)
                .put("namespace_kind", ns.kind())
                .put("namespace", ns.json())
                .put("namespace_serialized_hex", Hex.encode(serialize(nsSer, n)))
                .put("user_key_serializer", userKey == null ? null : userKey.serializer)
                .put("user_key_kind", userKey == null ? null : userKey.kind)
                .put("user_key", userKey == null ? null : userKey.json())
                .put("user_key_row_types", ukRow ? new ArrayList<Object>(userKey.rowTypes) : null)
                .put(
                        "user_key_row_hex",
                        ukRow ? Hex.encode(FlinkRows.bytes((BinaryRowData) uk)) : null)
                .put(
                        "user_key_serialized_hex",
                        userKey == null ? null : Hex.encode(serialize(ukSer, uk)))
                .put(
                        "ambiguous_key_possible",
                        CompositeKeySerializationUtils.isAmbiguousKeyPossible(keySer, nsSer))
                .put("key_group_and_key_hex", Hex.encode(keyAndGroup))
                .put("composite_key_namespace_hex", Hex.encode(withNs))
                .put("composite_key_namespace_user_key_hex", withUk == null ? null : Hex.encode(withUk));
    }

    // ------------------------------------------------------------------ replay

    @SuppressWarnings("unchecked")
    private static KeySpec keyFromJson(String serializer, String kind, Object json, Object types) {
        if (serializer == null) {
            return null;
        }
        switch (kind) {
            case "row":
                {
                    List<String> t = new ArrayList<>();
                    for (Object o : (List<Object>) types) {
                        t.add((String) o);
                    }
                    Object[] v = SqlValues.toInternal(SqlValues.parseTypes(t), (List<Object>) json);
                    return KeySpec.row(serializer, t, v);
                }
            case "int":
                return new KeySpec(serializer, kind, ((Json.Num) json).asInt(), null);
            case "long":
                return new KeySpec(serializer, kind, ((Json.Num) json).asLong(), null);
            case "string":
                return new KeySpec(serializer, kind, (String) json, null);
            default:
                throw new IllegalArgumentException("unknown key kind " + kind);
        }
    }

    @SuppressWarnings("unchecked")
    static String replay(Map<String, Object> in) throws IOException {
        KeySpec key =
                keyFromJson(
                        (String) in.get("key_serializer"),
                        (String) in.get("key_kind"),
                        in.get("key"),
                        in.get("key_row_types"));
        KeySpec userKey =
                keyFromJson(
                        (String) in.get("user_key_serializer"),
                        (String) in.get("user_key_kind"),
                        in.get("user_key"),
                        in.get("user_key_row_types"));
        String nsSer = (String) in.get("namespace_serializer");
        Object nsJson = in.get("namespace");
        NsSpec ns;
        switch ((String) in.get("namespace_kind")) {
            case "void":
                ns = new NsSpec(nsSer, 0, 0, null);
                break;
            case "time_window":
                {
                    Map<String, Object> w = (Map<String, Object>) nsJson;
                    ns = new NsSpec(
                            nsSer,
                            ((Json.Num) w.get("start")).asLong(),
                            ((Json.Num) w.get("end")).asLong(),
                            null);
                    break;
                }
            case "long":
                ns = new NsSpec(nsSer, 0, 0, ((Json.Num) nsJson).asLong());
                break;
            case "string":
                ns = new NsSpec(nsSer, 0, 0, (String) nsJson);
                break;
            default:
                throw new IllegalArgumentException("unknown namespace kind");
        }
        return line(
                        (String) in.get("id"),
                        ((Json.Num) in.get("max_parallelism")).asInt(),
                        key,
                        (String) in.get("key_row_case"),
                        ns,
                        userKey)
                .toString();
    }

    // ------------------------------------------------------------------ generation

    static final String[] NS_SERIALIZERS = {
        "VoidNamespaceSerializer", "TimeWindow.Serializer", "table.TimeWindow.Serializer",
        "LongSerializer", "StringSerializer",
    };

    static NsSpec randomNamespace(SplitMix64 r, boolean extended) {
        String s = r.pick(NS_SERIALIZERS);
        switch (s) {
            case "VoidNamespaceSerializer":
                return new NsSpec(s, 0, 0, null);
            case "TimeWindow.Serializer":
            case "table.TimeWindow.Serializer":
                {
                    long[] sizes = {1, 1000, 60_000, 3_600_000};
                    long size = r.pick(sizes);
                    long start;
                    int pick = r.nextInt(8);
                    if (pick == 0) {
                        long[] edges = {0, -1, -86_400_000L, Long.MIN_VALUE, Long.MAX_VALUE - size};
                        start = r.pick(edges);
                    } else {
                        start = r.range(-2_000_000_000_000L, 2_000_000_000_000L);
                    }
                    return new NsSpec(s, start, start + size, null);
                }
            case "LongSerializer":
                {
                    if (r.chance(1, 4)) {
                        long[] edges = {0, 1, 999, 1000, 3_600_000, -86_340_000L,
                            Long.MIN_VALUE + 1, Long.MIN_VALUE + 60_000,
                            Long.MAX_VALUE - 3_540_000, Long.MIN_VALUE, Long.MAX_VALUE};
                        return new NsSpec(s, 0, 0, r.pick(edges));
                    }
                    return new NsSpec(s, 0, 0, r.range(-2_000_000_000_000L, 2_000_000_000_000L));
                }
            default:
                return new NsSpec(
                        s, 0, 0, SqlValues.randomString(r, r.nextInt(16), extended));
        }
    }

    static final int[] INT_KEYS = {
        0, 1, -1, 2, 42, 127, 128, 255, 256, 32768, Integer.MIN_VALUE, Integer.MAX_VALUE,
        Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1, -2089875627, -1035494534, 0xcc9e2d51,
        0x1b873593, 0xe6546b64, 0x85ebca6b, 0xc2b2ae35,
    };

    static final long[] LONG_KEYS = {
        0, 1, -1, 42, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 31, (1L << 32) - 1, 1L << 32,
        -(1L << 32), Integer.MIN_VALUE, Integer.MAX_VALUE, Long.MIN_VALUE + (1L << 31),
    };

    static final String[] STRING_KEYS = {
        "", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnop", "é", "ééé", "éééa",
        "éééé", "日本a", "日本ab", "日本語", "😀", "😀abc", "😀😀", "\u0000", "\u0000".repeat(7),
        "\u0000".repeat(8), " ", "       ", "NULL", "\t\n\r\"\\/", "x".repeat(100),
        "Ünïcödé ✓ 😀 日本語", "\u007f\u0080\u07ff\u0800\uffff", "\uD800\uDC00\uDBFF\uDFFF",
        "polygenelubricants", "hello",
    };

    static List<String> generate(Ctx ctx, List<BinaryRowsFile.Case> cases) throws IOException {
        SplitMix64 r = ctx.rng("rocksdb_keys");
        boolean ext = ctx.extended;
        int[] rowMps = ext ? new int[] {128, 256, 4096, 32768, 1, 129} : new int[] {128, 256, 4096, 32768};
        List<String> out = new ArrayList<>();
        int[] counter = {0, 0};

        // user keys: random int / long / string / row (a case's key-selector row), or none
        java.util.function.Supplier<KeySpec> userKey =
                () -> {
                    switch (r.nextInt(5)) {
                        case 0:
                            return null;
                        case 1:
                            return KeySpec.of(SqlValues.randomInt(r));
                        case 2:
                            return KeySpec.of(SqlValues.randomLong(r));
                        case 3:
                            return KeySpec.of(SqlValues.randomString(r, r.nextInt(20), ext));
                        default:
                            {
                                BinaryRowsFile.Case c = r.pick(cases);
                                return KeySpec.row("RowDataSerializer", c.types, c.values);
                            }
                    }
                };

        // 1. row keys: every 4th case plus the special ones
        int pickNo = 0;
        for (int i = 0; i < cases.size(); i++) {
            BinaryRowsFile.Case c = cases.get(i);
            boolean special =
                    c.note.startsWith("hashCode edge")
                            || c.note.startsWith("arity 0")
                            || c.note.startsWith("wide ");
            if (i % 4 != 0 && !special) {
                continue;
            }
            checkKindIndependent(c);
            List<String> sers = new ArrayList<>();
            sers.add("RowDataSerializer");
            if (pickNo % 2 == 0) {
                sers.add("BinaryRowDataSerializer");
            }
            pickNo++;
            for (String s : sers) {
                int mp = rowMps[counter[0]++ % rowMps.length];
                String id = String.format("%s-rk%04d", ctx.prefix(), out.size());
                out.add(
                        line(id, mp, KeySpec.row(s, c.types, c.values), c.id,
                                        randomNamespace(r, ext), userKey.get())
                                .toString());
            }
        }

        // 2. int / long / string keys: edges, then random ones; two max parallelisms each
        List<Object> simple = new ArrayList<>();
        int randomPerKind = ext ? 25 : 5;
        for (int v : INT_KEYS) {
            simple.add(v);
        }
        for (int i = 0; i < randomPerKind; i++) {
            simple.add(r.nextInt());
        }
        for (long v : LONG_KEYS) {
            simple.add(v);
        }
        for (int i = 0; i < randomPerKind; i++) {
            simple.add(SqlValues.randomLong(r));
        }
        simple.addAll(Arrays.asList(STRING_KEYS));
        for (int i = 0; i < randomPerKind; i++) {
            simple.add(SqlValues.randomString(r, r.nextInt(24), ext));
        }
        int[] simpleMps = ext ? new int[] {256, 32768, 128, 1, 129} : new int[] {256, 32768};
        for (Object v : simple) {
            int first = counter[1]++;
            for (int j = 0; j < 2; j++) {
                int mp = simpleMps[(first + j) % simpleMps.length];
                String id = String.format("%s-rk%04d", ctx.prefix(), out.size());
                out.add(
                        line(id, mp, KeySpec.of(v), null, randomNamespace(r, ext), userKey.get())
                                .toString());
            }
        }
        return out;
    }

    /** The SQL key selector writes header 0 whatever the input RowKind (README point 7). */
    private static void checkKindIndependent(BinaryRowsFile.Case c) {
        LogicalType[] t = c.logicalTypes();
        byte[] a = FlinkRows.bytes(FlinkRows.viaKeySelector(t, c.values, c.kind));
        byte[] b = FlinkRows.bytes(FlinkRows.viaKeySelector(t, c.values, RowKind.INSERT));
        if (!Arrays.equals(a, b)) {
            throw new IllegalStateException("key selector row depends on RowKind for " + c.id);
        }
    }
}
