package flinkops;

import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

/**
 * Generates Flink 2.3.0 operator cases (group aggregate and Top-1) in the schema of
 * testdata/flink-operator-cases/README.md: inputs from a seeded SplitMix64, outputs from
 * running each case's SQL in Flink (twice; the two runs must agree for "changelog" cases).
 */
public final class CaseGen {

    // ------------------------------------------------------------------ SplitMix64
    static final class SplitMix64 {
        long state;

        SplitMix64(long seed) {
            state = seed;
        }

        long next() {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        /** Uniform in [0, n). */
        int below(int n) {
            return (int) Long.remainderUnsigned(next(), n);
        }

        boolean chance(int percent) {
            return below(100) < percent;
        }
    }

    // ------------------------------------------------------------------ columns
    /** A column: name, Flink type string, nullable, and its value generator. */
    record Column(String name, String type, boolean nullable, Gen gen) {}

    interface Gen {
        Object make(SplitMix64 r);
    }

    static Gen ints(int lo, int hi) {
        return r -> lo + r.below(hi - lo + 1);
    }

    static Gen longs(long lo, long hi) {
        return r -> lo + Long.remainderUnsigned(r.next(), hi - lo + 1);
    }

    static Gen nearLongLimits() {
        return r -> r.chance(50) ? Long.MAX_VALUE - r.below(1000) : Long.MIN_VALUE + r.below(1000);
    }

    static Gen doubles() {
        return r -> {
            int c = r.below(100);
            if (c < 4) return Double.NaN;
            if (c < 8) return -0.0;
            if (c < 12) return 0.0;
            if (c < 13) return Double.POSITIVE_INFINITY;
            if (c < 14) return Double.NEGATIVE_INFINITY;
            return (r.below(4000) - 2000) / 8.0;
        };
    }

    static Gen floats() {
        return r -> {
            int c = r.below(100);
            if (c < 4) return Float.NaN;
            if (c < 8) return -0.0f;
            return (r.below(400) - 200) / 4.0f;
        };
    }

    static Gen decimals(int precision, int scale, long range) {
        return r -> BigDecimal.valueOf(Long.remainderUnsigned(r.next(), 2 * range + 1) - range, scale);
    }

    static Gen strings(String... pool) {
        return r -> pool[r.below(pool.length)];
    }

    static Gen bytes() {
        return r -> (byte) (r.below(256) - 128);
    }

    static Gen shorts() {
        return r -> (short) (r.below(65536) - 32768);
    }

    static DataType dataType(String t, boolean nullable) {
        DataType d;
        switch (t) {
            case "TINYINT": d = DataTypes.TINYINT(); break;
            case "SMALLINT": d = DataTypes.SMALLINT(); break;
            case "INT": d = DataTypes.INT(); break;
            case "BIGINT": d = DataTypes.BIGINT(); break;
            case "FLOAT": d = DataTypes.FLOAT(); break;
            case "DOUBLE": d = DataTypes.DOUBLE(); break;
            case "STRING": d = DataTypes.STRING(); break;
            default:
                if (t.startsWith("DECIMAL(")) {
                    String[] ps = t.substring(8, t.length() - 1).split(",");
                    d = DataTypes.DECIMAL(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
                } else {
                    throw new IllegalArgumentException(t);
                }
        }
        return nullable ? d.nullable() : d.notNull();
    }

    static TypeInformation<?> typeInfo(String t) {
        switch (t) {
            case "TINYINT": return Types.BYTE;
            case "SMALLINT": return Types.SHORT;
            case "INT": return Types.INT;
            case "BIGINT": return Types.LONG;
            case "FLOAT": return Types.FLOAT;
            case "DOUBLE": return Types.DOUBLE;
            case "STRING": return Types.STRING;
            default: return Types.BIG_DEC;
        }
    }

    // ------------------------------------------------------------------ JSON
    static String json(Object v, String type) {
        if (v == null) return "null";
        if (v instanceof Long) return "\"" + v + "\"";
        if (v instanceof Double d) {
            if (d.isNaN()) return "\"NaN\"";
            if (d.isInfinite()) return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
            return Double.toString(d);
        }
        if (v instanceof Float f) {
            if (f.isNaN()) return "\"NaN\"";
            if (f.isInfinite()) return f > 0 ? "\"Infinity\"" : "\"-Infinity\"";
            return Float.toString(f);
        }
        if (v instanceof BigDecimal b) {
            int scale = Integer.parseInt(type.substring(type.indexOf(',') + 1, type.length() - 1).trim());
            return "\"" + b.setScale(scale).toPlainString() + "\"";
        }
        if (v instanceof String s) return quote(s);
        return v.toString();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String kind(RowKind k) {
        switch (k) {
            case INSERT: return "+I";
            case UPDATE_BEFORE: return "-U";
            case UPDATE_AFTER: return "+U";
            default: return "-D";
        }
    }

    static String columnsJson(List<Column> cols) {
        List<String> out = new ArrayList<>();
        for (Column c : cols) {
            out.add("{\"name\": " + quote(c.name) + ", \"type\": " + quote(c.type) + ", \"nullable\": " + c.nullable + "}");
        }
        return "[" + String.join(", ", out) + "]";
    }

    // ------------------------------------------------------------------ cases
    /** One case: input columns, SQL, spec JSON, output columns, config. */
    static final class Case {
        String name;
        String description;
        long seed;
        String operator;
        String sql;
        List<Column> input;
        String spec;
        List<Column> output;
        boolean miniBatch;
        boolean upsert;
        List<String> primaryKey = new ArrayList<>();
        int rows;
        int keyCol;
        Gen key;
        /** Percent of retracting events (0 = insert-only). */
        int retractPercent;
        /** Percent of retractions of rows never inserted. */
        int unknownPercent;
        int nullPercent;
    }

    /** Builds the input changelog. */
    static List<Row> inputRows(Case c) {
        SplitMix64 r = new SplitMix64(c.seed);
        List<Row> out = new ArrayList<>();
        List<Object[]> live = new ArrayList<>();
        while (out.size() < c.rows) {
            boolean retract = c.retractPercent > 0 && !live.isEmpty() && r.chance(c.retractPercent);
            if (retract) {
                boolean unknown = r.chance(c.unknownPercent);
                Object[] row;
                if (unknown) {
                    row = fresh(c, r);
                } else {
                    row = live.remove(r.below(live.size()));
                }
                if (r.chance(50)) {
                    out.add(Row.ofKind(RowKind.DELETE, row));
                } else {
                    out.add(Row.ofKind(RowKind.UPDATE_BEFORE, row));
                    Object[] after = fresh(c, r);
                    if (r.chance(50)) after[c.keyCol] = row[c.keyCol];
                    out.add(Row.ofKind(RowKind.UPDATE_AFTER, after));
                    live.add(after);
                }
            } else {
                Object[] row = fresh(c, r);
                out.add(Row.ofKind(RowKind.INSERT, row));
                live.add(row);
                if (c.retractPercent > 0 && r.chance(10)) {
                    out.add(Row.ofKind(RowKind.INSERT, row.clone()));
                    live.add(row.clone());
                }
            }
        }
        return out;
    }

    static Object[] fresh(Case c, SplitMix64 r) {
        Object[] row = new Object[c.input.size()];
        for (int i = 0; i < row.length; i++) {
            Column col = c.input.get(i);
            Object v = i == c.keyCol ? c.key.make(r) : col.gen.make(r);
            if (col.nullable && r.chance(c.nullPercent)) v = null;
            row[i] = v;
        }
        return row;
    }

    static List<String> run(Case c, List<Row> rows, StringBuilder plan) throws Exception {
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", "hashmap");
        conf.setString("table.exec.async-state.enabled", "false");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        env.setBufferTimeout(0);
        StreamTableEnvironment t = StreamTableEnvironment.create(env);
        t.getConfig().set("table.local-time-zone", "UTC");
        if (c.miniBatch) {
            t.getConfig().set("table.exec.mini-batch.enabled", "true");
            t.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
            t.getConfig().set("table.exec.mini-batch.size", "5000");
        }
        String[] names = new String[c.input.size()];
        TypeInformation<?>[] types = new TypeInformation<?>[c.input.size()];
        Schema.Builder schema = Schema.newBuilder();
        for (int i = 0; i < names.length; i++) {
            Column col = c.input.get(i);
            names[i] = col.name;
            types[i] = typeInfo(col.type);
            schema.column(col.name, dataType(col.type, col.nullable));
        }
        DataStream<Row> source = env.fromData(rows, Types.ROW_NAMED(names, types));
        boolean insertOnly = rows.stream().allMatch(x -> x.getKind() == RowKind.INSERT);
        Table in = t.fromChangelogStream(source, schema.build(),
                insertOnly ? ChangelogMode.insertOnly() : ChangelogMode.all());
        t.createTemporaryView("input", in);
        Table result = t.sqlQuery(c.sql);
        DataStream<Row> sink;
        if (c.upsert) {
            Schema.Builder out = Schema.newBuilder();
            for (Column col : c.output) out.column(col.name, dataType(col.type, col.nullable));
            out.primaryKey(c.primaryKey);
            sink = t.toChangelogStream(result, out.build(), ChangelogMode.upsert());
        } else {
            sink = t.toChangelogStream(result);
        }
        if (plan != null) {
            plan.append(result.explain(ExplainDetail.CHANGELOG_MODE));
        }
        List<String> lines = new ArrayList<>();
        try (CloseableIterator<Row> it = sink.executeAndCollect()) {
            while (it.hasNext()) {
                Row row = it.next();
                List<String> vals = new ArrayList<>();
                for (int i = 0; i < row.getArity(); i++) vals.add(json(row.getField(i), c.output.get(i).type));
                lines.add("{\"kind\":\"" + kind(row.getKind()) + "\",\"row\":[" + String.join(",", vals) + "]}");
            }
        }
        t.dropTemporaryView("input");
        return lines;
    }

    static void write(Path dir, Case c) throws Exception {
        List<Row> rows = inputRows(c);
        StringBuilder plan = new StringBuilder();
        List<String> first = run(c, rows, plan);
        String compare = c.miniBatch ? "final" : "changelog";
        if (!c.miniBatch) {
            List<String> second = run(c, rows, null);
            if (!first.equals(second)) throw new IllegalStateException(c.name + ": the two Flink runs differ");
        }
        Path d = dir.resolve(c.name);
        Files.createDirectories(d);
        try (Writer w = Files.newBufferedWriter(d.resolve("input.jsonl"), StandardCharsets.UTF_8)) {
            for (Row row : rows) {
                List<String> vals = new ArrayList<>();
                for (int i = 0; i < row.getArity(); i++) vals.add(json(row.getField(i), c.input.get(i).type));
                w.write("{\"input\":\"input\",\"kind\":\"" + kind(row.getKind()) + "\",\"row\":[" + String.join(",", vals) + "]}\n");
            }
        }
        try (Writer w = Files.newBufferedWriter(d.resolve("output.jsonl"), StandardCharsets.UTF_8)) {
            for (String l : first) w.write(l + "\n");
        }
        Map<String, String> f = new LinkedHashMap<>();
        f.put("name", quote(c.name));
        f.put("flink", quote("2.3.0"));
        f.put("description", quote(c.description));
        f.put("seed", Long.toString(c.seed));
        f.put("operator", quote(c.operator));
        f.put("sql", quote(c.sql));
        f.put("plan", quote(plan.toString()));
        f.put("inputs", "{\"input\": " + columnsJson(c.input) + "}");
        f.put("spec", c.spec);
        f.put("config", "{\"parallelism\": 1, \"mini_batch\": " + c.miniBatch
                + (c.miniBatch ? ", \"mini_batch_size\": 5000" : "")
                + ", \"local_time_zone\": \"UTC\", \"changelog_mode\": " + quote(c.upsert ? "upsert" : "all") + "}");
        f.put("output", columnsJson(c.output));
        f.put("compare", quote(compare));
        if (c.miniBatch) f.put("compare_reason", quote("mini-batch bundles close on a processing-time timer"));
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, String> e : f.entrySet()) parts.add("  " + quote(e.getKey()) + ": " + e.getValue());
        Files.writeString(d.resolve("case.json"), "{\n" + String.join(",\n", parts) + "\n}\n");
        System.out.println(c.name + ": " + rows.size() + " input rows, " + first.size() + " output rows");
    }

    // ------------------------------------------------------------------ the case set
    static String agg(String fn, int arg, boolean distinct) {
        return "{\"function\": \"" + fn + "\", \"args\": [" + (arg < 0 ? "" : Integer.toString(arg)) + "], \"distinct\": " + distinct + "}";
    }

    static Case groupAgg(String name, String description, long seed, List<Column> input, String[][] aggs,
                         boolean retract, boolean miniBatch, boolean upsert, int rows, Gen key) {
        Case c = new Case();
        c.name = name;
        c.description = description;
        c.seed = seed;
        c.operator = "group_aggregate";
        c.input = input;
        c.keyCol = 0;
        c.key = key;
        c.rows = rows;
        c.retractPercent = retract ? 35 : 0;
        c.unknownPercent = retract ? 10 : 0;
        c.nullPercent = 15;
        c.miniBatch = miniBatch;
        c.upsert = upsert;
        List<String> select = new ArrayList<>();
        List<String> specAggs = new ArrayList<>();
        c.output = new ArrayList<>();
        c.output.add(new Column(input.get(0).name, input.get(0).type, input.get(0).nullable, null));
        select.add(input.get(0).name);
        int i = 0;
        for (String[] a : aggs) {
            // a = {FUNCTION, argIndex or "", "distinct"?, result type, result nullable}
            String fn = a[0];
            int arg = a[1].isEmpty() ? -1 : Integer.parseInt(a[1]);
            boolean distinct = a[2].equals("distinct");
            String alias = "a" + (i++);
            String sqlFn = fn.equals("COUNT_STAR") ? "COUNT(*)"
                    : fn + "(" + (distinct ? "DISTINCT " : "") + input.get(arg).name + ")";
            select.add(sqlFn + " AS " + alias);
            specAggs.add(agg(fn, arg, distinct));
            c.output.add(new Column(alias, a[3], Boolean.parseBoolean(a[4]), null));
        }
        c.sql = "SELECT " + String.join(", ", select) + " FROM `input` GROUP BY " + input.get(0).name;
        c.spec = "{\"group_by\": [0], \"aggregates\": [" + String.join(", ", specAggs) + "], \"input_insert_only\": " + !retract + "}";
        if (upsert) c.primaryKey.add(input.get(0).name);
        return c;
    }

    static Case top1(String name, String description, long seed, String order, String orderSpec,
                     boolean rownum, boolean upsert, int rows) {
        Case c = new Case();
        c.name = name;
        c.description = description;
        c.seed = seed;
        c.operator = "top1";
        c.input = List.of(
                new Column("k", "INT", !upsert, ints(0, 9)),
                new Column("id", "BIGINT", false, longs(0, 1_000_000)),
                new Column("v", "DOUBLE", true, doubles()),
                new Column("w", "INT", true, ints(0, 3)));
        c.keyCol = 0;
        c.key = ints(0, 9);
        c.rows = rows;
        c.nullPercent = 10;
        c.upsert = upsert;
        c.sql = "SELECT k, id, v, w" + (rownum ? ", rn" : "") + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
                + order + ") AS rn FROM `input`) WHERE rn = 1";
        c.spec = "{\"partition_by\": [0], \"order_by\": [" + orderSpec + "], \"rank_limit\": 1, \"output_rank_number\": " + rownum + "}";
        c.output = new ArrayList<>(c.input);
        if (rownum) c.output.add(new Column("rn", "BIGINT", false, null));
        if (upsert) c.primaryKey.add("k");
        return c;
    }

    static String ord(int col, boolean desc, boolean nullsLast) {
        return "{\"column\": " + col + ", \"descending\": " + desc + ", \"nulls_last\": " + nullsLast + "}";
    }

    static List<Case> cases() {
        List<Column> typed = List.of(
                new Column("k", "INT", true, ints(0, 7)),
                new Column("t", "TINYINT", true, bytes()),
                new Column("s", "SMALLINT", true, shorts()),
                new Column("i", "INT", true, ints(Integer.MIN_VALUE / 2, Integer.MAX_VALUE / 2)),
                new Column("b", "BIGINT", true, nearLongLimits()),
                new Column("f", "FLOAT", true, floats()),
                new Column("d", "DOUBLE", true, doubles()),
                new Column("m", "DECIMAL(10, 2)", true, decimals(10, 2, 99_999_999L)),
                new Column("n", "DECIMAL(30, 4)", true, decimals(30, 4, 999_999_999_999L)),
                new Column("str", "STRING", true, strings("", "a", "b", "ab", "zz", "é", "longer-than-seven")));
        String[][] sums = {
                {"COUNT_STAR", "", "", "BIGINT", "false"},
                {"SUM", "1", "", "TINYINT", "true"}, {"SUM", "2", "", "SMALLINT", "true"},
                {"SUM", "3", "", "INT", "true"}, {"SUM", "4", "", "BIGINT", "true"},
                {"SUM", "5", "", "FLOAT", "true"}, {"SUM", "6", "", "DOUBLE", "true"},
                {"SUM", "7", "", "DECIMAL(38, 2)", "true"}, {"SUM", "8", "", "DECIMAL(38, 4)", "true"},
                {"MIN", "6", "", "DOUBLE", "true"}, {"MAX", "6", "", "DOUBLE", "true"},
                {"MIN", "9", "", "STRING", "true"}, {"MAX", "9", "", "STRING", "true"},
                {"MIN", "8", "", "DECIMAL(30, 4)", "true"}, {"MAX", "5", "", "FLOAT", "true"},
                {"COUNT", "9", "", "BIGINT", "false"}};
        String[][] avgs = {
                {"COUNT", "6", "", "BIGINT", "false"},
                {"AVG", "1", "", "TINYINT", "true"}, {"AVG", "2", "", "SMALLINT", "true"},
                {"AVG", "3", "", "INT", "true"}, {"AVG", "4", "", "BIGINT", "true"},
                {"AVG", "5", "", "FLOAT", "true"}, {"AVG", "6", "", "DOUBLE", "true"},
                {"AVG", "7", "", "DECIMAL(38, 6)", "true"}, {"AVG", "8", "", "DECIMAL(38, 6)", "true"},
                {"SUM", "6", "", "DOUBLE", "true"}, {"MAX", "4", "", "BIGINT", "true"}};
        String[][] firstLast = {
                {"FIRST_VALUE", "6", "", "DOUBLE", "true"}, {"LAST_VALUE", "9", "", "STRING", "true"},
                {"FIRST_VALUE", "7", "", "DECIMAL(10, 2)", "true"}, {"LAST_VALUE", "1", "", "TINYINT", "true"},
                {"MIN", "3", "", "INT", "true"}};
        String[][] distinct = {
                {"COUNT_STAR", "", "", "BIGINT", "false"},
                {"COUNT", "6", "distinct", "BIGINT", "false"}, {"SUM", "6", "distinct", "DOUBLE", "true"},
                {"COUNT", "9", "distinct", "BIGINT", "false"}, {"SUM", "3", "distinct", "INT", "true"},
                {"COUNT", "3", "distinct", "BIGINT", "false"}, {"MAX", "6", "", "DOUBLE", "true"}};
        List<Case> out = new ArrayList<>();
        out.add(groupAgg("gen_ga_sums_insert", "Every type under SUM/MIN/MAX/COUNT, insert-only, nulls everywhere, specials (NaN, -0.0, infinities, limits).",
                201, typed, sums, false, false, false, 600, ints(0, 7)));
        out.add(groupAgg("gen_ga_sums_retract", "As gen_ga_sums_insert on a retraction storm (35% retractions, 10% of them of rows never inserted).",
                202, typed, sums, true, false, false, 1500, ints(0, 7)));
        out.add(groupAgg("gen_ga_avg_insert", "AVG of every numeric type (the planner's $SUM0/COUNT rewrite), insert-only.",
                203, typed, avgs, false, false, false, 600, ints(0, 7)));
        out.add(groupAgg("gen_ga_avg_retract", "AVG of every numeric type on a retraction storm.",
                204, typed, avgs, true, false, false, 1500, ints(0, 7)));
        out.add(groupAgg("gen_ga_first_last", "FIRST_VALUE/LAST_VALUE over several types, insert-only.",
                205, typed, firstLast, false, false, false, 500, ints(0, 7)));
        out.add(groupAgg("gen_ga_distinct_retract", "COUNT/SUM(DISTINCT) over DOUBLE (NaN, -0.0), STRING and INT on a retraction storm.",
                206, typed, distinct, true, false, false, 1500, ints(0, 3)));
        out.add(groupAgg("gen_ga_large_group", "One group of thousands of rows: MIN/MAX with retraction under heavy churn.",
                207, typed, sums, true, false, false, 6000, ints(0, 0)));
        out.add(groupAgg("gen_ga_upsert_retract", "Retraction storm collected in upsert mode (NOT NULL key).",
                208, nonNullKey(typed), sums, true, false, true, 1200, ints(0, 7)));
        out.add(groupAgg("gen_ga_minibatch_retract", "Mini-batch (local-global) over a retraction storm with DISTINCT.",
                209, typed, distinct, true, true, false, 3000, ints(0, 7)));
        out.add(groupAgg("gen_ga_minibatch_first_last", "Mini-batch with FIRST_VALUE/LAST_VALUE (one-phase plan), insert-only.",
                210, typed, firstLast, false, true, false, 3000, ints(0, 7)));
        out.add(top1("gen_top1_desc_nulls_first", "One DESC column with NULLS FIRST over DOUBLE with NaN, -0.0, ties.",
                211, "v DESC NULLS FIRST", ord(2, true, false), true, false, 600));
        out.add(top1("gen_top1_asc_default", "One ASC column (default NULLS FIRST) over DOUBLE with NaN, -0.0, ties.",
                212, "v", ord(2, false, false), false, false, 600));
        out.add(top1("gen_top1_two_columns", "Two order columns (w ASC NULLS LAST, v DESC) with ties.",
                213, "w ASC NULLS LAST, v DESC", ord(3, false, true) + ", " + ord(2, true, true), true, false, 600));
        out.add(top1("gen_top1_desc_upsert", "One DESC column in upsert mode.",
                214, "v DESC", ord(2, true, true), false, true, 600));
        return out;
    }

    static List<Column> nonNullKey(List<Column> cols) {
        List<Column> out = new ArrayList<>(cols);
        Column k = out.get(0);
        out.set(0, new Column(k.name, k.type, false, k.gen));
        return out;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : "out");
        Files.createDirectories(dir);
        String only = args.length > 1 ? args[1] : null;
        for (Case c : cases()) {
            if (only != null && !c.name.equals(only)) continue;
            write(dir, c);
        }
    }

    private CaseGen() {}

}
