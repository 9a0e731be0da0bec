package flinkoracle;

import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.types.RowKind;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** binary_rows.jsonl: each SQL key row ("case") built three ways. */
final class BinaryRowsFile {
    private BinaryRowsFile() {}

    static final String NAME = "binary_rows.jsonl";

    /** One logical row; the generator later picks rocksdb keys from these. */
    static final class Case {
        final String id;
        final String note;
        final List<String> types;
        final Object[] values; // Flink internal objects
        final RowKind kind;

        Case(String id, String note, List<String> types, Object[] values, RowKind kind) {
            this.id = id;
            this.note = note;
            this.types = types;
            this.values = values;
            this.kind = kind;
        }

        LogicalType[] logicalTypes() {
            return SqlValues.parseTypes(types);
        }
    }

    /** The type palette of the public set, in the order of its "all types" row. */
    static final String[] BASE_TYPES = {
        "INT", "BIGINT", "STRING", "DECIMAL(10, 2)", "TIMESTAMP(3)", "TIMESTAMP(9)",
        "TIMESTAMP_LTZ(6)", "DATE", "TIME(0)", "BOOLEAN", "TINYINT", "SMALLINT", "FLOAT",
        "DOUBLE", "BINARY(4)", "VARBINARY(20)", "CHAR(5)", "DECIMAL(38, 10)", "VARCHAR(10)",
        "TIMESTAMP(6)", "DECIMAL(18, 4)", "DECIMAL(19, 0)",
    };

    /** Extra types of the extended palette. */
    static final String[] EXTRA_TYPES = {
        "TIMESTAMP(0)", "TIMESTAMP(1)", "TIMESTAMP(2)", "TIMESTAMP(4)", "TIMESTAMP(5)",
        "TIMESTAMP(7)", "TIMESTAMP(8)", "TIMESTAMP_LTZ(0)", "TIMESTAMP_LTZ(1)",
        "TIMESTAMP_LTZ(2)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(4)", "TIMESTAMP_LTZ(5)",
        "TIMESTAMP_LTZ(7)", "TIMESTAMP_LTZ(8)", "TIMESTAMP_LTZ(9)", "DECIMAL(1, 0)",
        "DECIMAL(1, 1)", "DECIMAL(5, 5)", "DECIMAL(17, 3)", "DECIMAL(20, 10)", "DECIMAL(38, 0)",
        "DECIMAL(38, 38)", "CHAR(1)", "CHAR(10)", "VARCHAR(1)", "VARCHAR(100)", "BINARY(1)",
        "BINARY(16)", "VARBINARY(1)", "VARBINARY(100)", "BYTES", "TIME(3)",
    };

    static final int[] BASE_MPS = {128, 256, 4096, 32768};
    static final int[] EXTENDED_MPS = {1, 128, 129, 256, 4096, 32768};

    // ------------------------------------------------------------------ one line

    static Json.Obj line(
            String caseId,
            String path,
            String note,
            List<String> typeTexts,
            Object[] values,
            RowKind kind,
            int[] mps) {
        LogicalType[] types = SqlValues.parseTypes(typeTexts);
        BinaryRowData row = FlinkRows.build(path, types, values, kind);
        byte[] bytes = FlinkRows.bytes(row);
        if ((bytes[0] & 0xff) != row.getRowKind().toByteValue()) {
            throw new IllegalStateException("header byte and getRowKind disagree");
        }
        Json.Obj keyGroups = new Json.Obj();
        for (int mp : mps) {
            keyGroups.put(
                    Integer.toString(mp), KeyGroupRangeAssignment.assignToKeyGroup(row, mp));
        }
        return new Json.Obj()
                .put("id", caseId + "/" + path)
                .put("case", caseId)
                .put("path", path)
                .put("note", note)
                .put("types", new ArrayList<Object>(typeTexts))
                .put("values", SqlValues.toJson(types, values))
                .put("row_kind", kind.name())
                .put("header_byte", bytes[0] & 0xff)
                .put("arity", row.getArity())
                .put("fixed_part_size", BinaryRowData.calculateFixPartSizeInBytes(row.getArity()))
                .put("size_in_bytes", row.getSizeInBytes())
                .put("row_hex", Hex.encode(bytes))
                .put("hash_code", row.hashCode())
                .put("key_groups", keyGroups)
                .put("serialized_hex", Hex.encode(FlinkRows.serialized(row, types)));
    }

    @SuppressWarnings("unchecked")
    static String replay(Map<String, Object> in) {
        List<String> typeTexts = new ArrayList<>();
        for (Object o : (List<Object>) in.get("types")) {
            typeTexts.add((String) o);
        }
        LogicalType[] types = SqlValues.parseTypes(typeTexts);
        Object[] values = SqlValues.toInternal(types, (List<Object>) in.get("values"));
        Map<String, Object> kg = (Map<String, Object>) in.get("key_groups");
        int[] mps = kg.keySet().stream().mapToInt(Integer::parseInt).toArray();
        return line(
                        (String) in.get("case"),
                        (String) in.get("path"),
                        (String) in.get("note"),
                        typeTexts,
                        values,
                        RowKind.valueOf((String) in.get("row_kind")),
                        mps)
                .toString();
    }

    // ------------------------------------------------------------------ generation

    private static final class Gen {
        final Ctx ctx;
        final SplitMix64 r;
        final List<Case> cases = new ArrayList<>();

        Gen(Ctx ctx) {
            this.ctx = ctx;
            this.r = ctx.rng("binary_rows");
        }

        void add(String note, List<String> types, Object[] values, RowKind kind) {
            LogicalType[] lt = SqlValues.parseTypes(types);
            for (int i = 0; i < lt.length; i++) {
                SqlValues.checkValue(lt[i], values[i]);
            }
            String id = String.format("%s%04d", ctx.prefix(), cases.size());
            cases.add(new Case(id, note, types, values, kind));
        }

        void add(String note, String type, Object value) {
            add(note, List.of(type), new Object[] {value}, RowKind.INSERT);
        }

        Object[] randomValues(List<String> types, int nullPercent) {
            Object[] v = new Object[types.size()];
            for (int i = 0; i < v.length; i++) {
                if (r.nextInt(100) < nullPercent) {
                    v[i] = null;
                } else {
                    v[i] = SqlValues.random(r, SqlValues.parseType(types.get(i)), ctx.extended);
                }
            }
            return v;
        }

        String randomType() {
            if (ctx.extended) {
                int pick = r.nextInt(10);
                if (pick == 0) {
                    int p = r.rangeInt(1, 38);
                    return SqlValues.canonical("DECIMAL(" + p + ", " + r.rangeInt(0, p) + ")");
                }
                if (pick <= 2) {
                    return SqlValues.canonical(r.pick(EXTRA_TYPES));
                }
            }
            return r.pick(BASE_TYPES);
        }

        List<String> randomTypes(int n) {
            List<String> t = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                t.add(randomType());
            }
            return t;
        }

        RowKind randomKind() {
            if (r.chance(9, 10)) {
                return RowKind.INSERT;
            }
            return r.pick(RowKind.values());
        }
    }

    static TimestampData ts(long millis, int nano) {
        return TimestampData.fromEpochMillis(millis, nano);
    }

    static DecimalData dec(String v, int p, int s) {
        return SqlValues.decimal(new java.math.BigDecimal(v).setScale(s).unscaledValue(), p, s);
    }

    static StringData str(String s) {
        return StringData.fromString(s);
    }

    static Object[][] edgeValues(String type) {
        switch (type) {
            case "INT":
                return new Object[][] {{0}, {1}, {-1}, {Integer.MIN_VALUE}, {Integer.MAX_VALUE}};
            case "BIGINT":
                return new Object[][] {{0L}, {1L}, {-1L}, {Long.MIN_VALUE}, {Long.MAX_VALUE}};
            case "STRING":
                return new Object[][] {
                    {str("")}, {str("a")}, {str("ab")}, {str("abcdefg")}, {str("abcdefgh")},
                    {str("éééé")}, {str("\u0000")}
                };
            case "DECIMAL(10, 2)":
                return new Object[][] {
                    {dec("0", 10, 2)}, {dec("0.01", 10, 2)}, {dec("-0.01", 10, 2)},
                    {dec("99999999.99", 10, 2)}, {dec("-99999999.99", 10, 2)}
                };
            case "TIMESTAMP(3)":
                return new Object[][] {
                    {ts(0, 0)}, {ts(-1, 0)}, {ts(-1000, 0)}, {ts(SqlValues.MIN_MILLIS, 0)},
                    {ts(SqlValues.MAX_MILLIS, 0)}
                };
            case "TIMESTAMP(9)":
                return new Object[][] {
                    {ts(0, 0)}, {ts(0, 1)}, {ts(0, 999_999)}, {ts(-1, 999_999)}, {ts(-1, 0)}
                };
            case "TIMESTAMP_LTZ(6)":
            case "TIMESTAMP(6)":
                return new Object[][] {{ts(0, 0)}, {ts(0, 999_000)}, {ts(-1, 999_000)}};
            case "DATE":
                return new Object[][] {
                    {0}, {1}, {-1}, {SqlValues.MIN_DATE}, {SqlValues.MAX_DATE}
                };
            case "TIME(0)":
                return new Object[][] {{0}, {1000}, {43_200_000}, {86_399_000}};
            case "BOOLEAN":
                return new Object[][] {{false}, {true}};
            case "TINYINT":
                return new Object[][] {
                    {(byte) 0}, {(byte) 1}, {(byte) -1}, {Byte.MIN_VALUE}, {Byte.MAX_VALUE}
                };
            case "SMALLINT":
                return new Object[][] {
                    {(short) 0}, {(short) 1}, {(short) -1}, {Short.MIN_VALUE}, {Short.MAX_VALUE}
                };
            case "FLOAT":
                return new Object[][] {
                    {0.0f}, {-0.0f}, {1.0f}, {Float.NaN}, {Float.POSITIVE_INFINITY}
                };
            case "DOUBLE":
                return new Object[][] {
                    {0.0}, {-0.0}, {1.0}, {Double.NaN}, {Double.NEGATIVE_INFINITY}
                };
            case "BINARY(4)":
                return new Object[][] {
                    {Hex.decode("00000000")}, {Hex.decode("ffffffff")}, {Hex.decode("01020304")}
                };
            case "VARBINARY(20)":
                return new Object[][] {
                    {new byte[0]}, {Hex.decode("f0")}, {Hex.decode("f0f1f2f3f4f5f6")},
                    {Hex.decode("f0f1f2f3f4f5f6f7")}
                };
            case "CHAR(5)":
                return new Object[][] {
                    {str("aaaaa")}, {str("ééééé")}, {str("日日日日日")}, {str("a    ")}
                };
            case "DECIMAL(38, 10)":
                {
                    String nines = "9".repeat(28) + "." + "9".repeat(10);
                    return new Object[][] {
                        {dec("0", 38, 10)}, {dec("0.0000000001", 38, 10)},
                        {dec("-0.0000000001", 38, 10)}, {dec(nines, 38, 10)},
                        {dec("-" + nines, 38, 10)}
                    };
                }
            case "VARCHAR(10)":
                return new Object[][] {{str("")}, {str("a")}, {str("ab")}, {str("abcdefghij")}};
            case "DECIMAL(18, 4)":
                {
                    String nines = "9".repeat(14) + "." + "9".repeat(4);
                    return new Object[][] {
                        {dec("0", 18, 4)}, {dec("0.0001", 18, 4)}, {dec("-0.0001", 18, 4)},
                        {dec(nines, 18, 4)}, {dec("-" + nines, 18, 4)}
                    };
                }
            case "DECIMAL(19, 0)":
                {
                    String nines = "9".repeat(19);
                    return new Object[][] {
                        {dec("0", 19, 0)}, {dec("1", 19, 0)}, {dec("-1", 19, 0)},
                        {dec("128", 19, 0)}, {dec(nines, 19, 0)}, {dec("-" + nines, 19, 0)}
                    };
                }
            default:
                throw new IllegalArgumentException(type);
        }
    }

    static final int[] HASH_TARGETS = {
        Integer.MIN_VALUE, -2089875627, -1035494534, 0, Integer.MAX_VALUE
    };

    static List<Case> cases(Ctx ctx) {
        Gen g = new Gen(ctx);
        List<String> base = Arrays.asList(BASE_TYPES);

        // 1. edge values of every base type
        for (String t : BASE_TYPES) {
            for (Object[] v : edgeValues(t)) {
                g.add("edge value", List.of(t), v, RowKind.INSERT);
            }
        }

        // 2. rows whose hashCode is a murmur / key-group edge
        for (int target : HASH_TARGETS) {
            g.add("hashCode edge " + target, "INT", HashEdges.intKeyFor(target));
            g.add("hashCode edge " + target, "BIGINT", HashEdges.longKeyFor(target, -1));
            for (Case c : g.cases.subList(g.cases.size() - 2, g.cases.size())) {
                int h = FlinkRows.viaWriter(c.logicalTypes(), c.values, c.kind).hashCode();
                if (h != target) {
                    throw new IllegalStateException("hashCode edge search missed: " + h);
                }
            }
        }

        // 3. row kinds (header byte, and the key selector's header 0)
        Object[] allTypes = g.randomValues(base, 0);
        for (RowKind k : RowKind.values()) {
            g.add("row kind " + k.name(), List.of("INT"), new Object[] {42}, k);
            g.add("row kind " + k.name() + ", all types", base, allTypes.clone(), k);
        }

        // 4. nulls: all null, then one null at each position of the all-types row
        g.add("all null", base, new Object[base.size()], RowKind.INSERT);
        for (int i = 0; i < base.size(); i++) {
            Object[] v = allTypes.clone();
            v[i] = null;
            g.add("null at " + i + " (" + base.get(i) + ")", base, v, RowKind.INSERT);
        }

        // 5. arity 0 (global aggregation key) and the 7/8/9-byte string boundary
        g.add("arity 0", List.of(), new Object[0], RowKind.INSERT);
        g.add(
                "7/8/9-byte strings",
                List.of("STRING", "STRING", "STRING", "STRING"),
                new Object[] {str("abcdefg"), str("abcdefgh"), str("éééé"), str("abcdefghi")},
                RowKind.INSERT);

        // 6. wide rows (null bit set widths)
        int[] widths = ctx.extended
                ? new int[] {10, 16, 56, 57, 120, 121, 184, 185}
                : new int[] {10, 16, 57};
        for (int n : widths) {
            List<String> types = g.randomTypes(n);
            Object[] v = g.randomValues(types, 10);
            v[n - 1] = null;
            g.add("wide " + n + ", last null", types, v, RowKind.INSERT);
        }

        if (ctx.extended) {
            extendedCases(g);
        }

        // 7. random rows
        int randomCount = ctx.extended ? 400 : 90;
        for (int i = 0; i < randomCount; i++) {
            int n = g.r.chance(17, 20) ? g.r.rangeInt(1, 5) : g.r.rangeInt(6, 16);
            List<String> types = g.randomTypes(n);
            g.add("random", types, g.randomValues(types, 8), g.randomKind());
        }
        return g.cases;
    }

    private static void extendedCases(Gen g) {
        SplitMix64 r = g.r;
        // all types of the extended palette, per row kind, plus nulls at each position
        List<String> ext = new ArrayList<>(Arrays.asList(BASE_TYPES));
        ext.addAll(Arrays.asList(EXTRA_TYPES));
        ext.replaceAll(SqlValues::canonical);
        Object[] extValues = g.randomValues(ext, 0);
        for (RowKind k : RowKind.values()) {
            g.add("row kind " + k.name() + ", all extended types", ext, extValues.clone(), k);
        }
        g.add("all null, extended types", ext, new Object[ext.size()], RowKind.INSERT);
        for (int i = 0; i < ext.size(); i++) {
            Object[] v = extValues.clone();
            v[i] = null;
            g.add("null at " + i + " (" + ext.get(i) + ")", ext, v, RowKind.INSERT);
        }

        // TIMESTAMP / TIMESTAMP_LTZ precisions 0..9, pre-1970 values, and a null
        for (String kind : new String[] {"TIMESTAMP", "TIMESTAMP_LTZ"}) {
            for (int p = 0; p <= 9; p++) {
                String t = SqlValues.canonical(kind + "(" + p + ")");
                List<String> types = List.of(t, t, t, t, t, t);
                Object[] v = {
                    SqlValues.truncate(-1, 999_999, p),
                    SqlValues.truncate(-86_400_000L + 1, 123_456, p),
                    SqlValues.truncate(r.range(SqlValues.MIN_MILLIS, -1), r.nextInt(1_000_000), p),
                    SqlValues.truncate(SqlValues.MIN_MILLIS, 0, p),
                    SqlValues.truncate(r.range(0, SqlValues.MAX_MILLIS), r.nextInt(1_000_000), p),
                    null,
                };
                g.add("pre-1970 " + t + ", last null", types, v, RowKind.INSERT);
            }
        }

        // DECIMAL precisions 1..38: max, min, smallest step, random, null
        for (int p = 1; p <= 38; p++) {
            int s = p == 1 ? 0 : (p % 3 == 0 ? p : r.rangeInt(0, p));
            String t = SqlValues.canonical("DECIMAL(" + p + ", " + s + ")");
            BigInteger max = BigInteger.TEN.pow(p).subtract(BigInteger.ONE);
            List<String> types = List.of(t, t, t, t, t, t);
            Object[] v = {
                SqlValues.decimal(max, p, s),
                SqlValues.decimal(max.negate(), p, s),
                SqlValues.decimal(BigInteger.ONE.negate(), p, s),
                SqlValues.randomDecimal(r, p, s),
                SqlValues.decimal(BigInteger.ZERO, p, s),
                null,
            };
            g.add("DECIMAL precision " + p + ", last null", types, v, RowKind.INSERT);
        }

        // floats: NaN payloads, -0.0, infinities, denormals
        int[] floatBits = {
            0x7fc00000, 0x7fc00001, 0x7f800001, 0xffc00000, 0xff800001, 0x7fffffff, 0xffffffff,
            0x80000000, 0x00000001, 0x80000001, 0x7f7fffff, 0xff800000,
        };
        long[] doubleBits = {
            0x7ff8000000000000L, 0x7ff8000000000001L, 0x7ff0000000000001L,
            0xfff8000000000000L, 0xfff0000000000001L, 0x7fffffffffffffffL,
            0xffffffffffffffffL, 0x8000000000000000L, 0x0000000000000001L,
            0x8000000000000001L, 0x7fefffffffffffffL, 0xfff0000000000000L,
        };
        for (int i = 0; i < floatBits.length; i++) {
            g.add(
                    "float bits " + String.format("%08x", floatBits[i]) + " / double bits "
                            + String.format("%016x", doubleBits[i]),
                    List.of("FLOAT", "DOUBLE"),
                    new Object[] {
                        Float.intBitsToFloat(floatBits[i]), Double.longBitsToDouble(doubleBits[i])
                    },
                    RowKind.INSERT);
        }

        // unicode strings: surrogate pairs around the 7/8-byte inline boundary
        String[] unicode = {
            "😀", "😀😀", "a😀", "abc😀", "abcd😀", "😀abcd", "𝄞𝄞", "\uD840\uDC00",
            "\uDBFF\uDFFF", "𐀀", "é😀é", "日本😀", "\u0000😀", "\u007f\u0080\u07ff\u0800\uffff",
            "e\u0301", "👩\u200D💻", "😀".repeat(20),
        };
        for (String s : unicode) {
            int cps = s.codePointCount(0, s.length());
            String charType = SqlValues.canonical("CHAR(" + cps + ")");
            g.add(
                    "unicode",
                    List.of("STRING", charType, "VARCHAR(100)"),
                    new Object[] {str(s), str(s), str(s)},
                    RowKind.INSERT);
        }
    }

    static List<String> generate(Ctx ctx, List<Case> casesOut) {
        int[] mps = ctx.extended ? EXTENDED_MPS : BASE_MPS;
        List<String> out = new ArrayList<>();
        for (Case c : cases(ctx)) {
            for (String path : FlinkRows.PATHS) {
                out.add(line(c.id, path, c.note, c.types, c.values, c.kind, mps).toString());
            }
            casesOut.add(c);
        }
        return out;
    }
}
