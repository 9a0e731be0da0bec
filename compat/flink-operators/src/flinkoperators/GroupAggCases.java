package flinkoperators;

import static flinkoperators.CaseDef.col;
import static flinkoperators.Spec.agg;
import static flinkoperators.Spec.countStar;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

import org.apache.flink.types.RowKind;

/** Group aggregate cases: retraction storms, nulls, every function x type, limits, large groups. */
final class GroupAggCases {
    private GroupAggCases() {}

    static final String MINI_BATCH_REASON = "With mini-batch on, a bundle closes after 5000 rows or when the 1 s "
            + "processing-time latency fires, so the intermediate changelog depends on wall-clock timing; the final "
            + "table does not.";

    static void all(List<CaseDef> out) {
        out.add(retractStorm());
        out.add(nulls(true));
        out.add(nulls(false));
        out.add(integral(true));
        out.add(integral(false));
        out.add(floatDecimal(true));
        out.add(floatDecimal(false));
        out.add(stringRetract());
        out.add(largeGroup());
        out.add(miniBatch(false));
        out.add(miniBatch(true));
        out.add(upsertRetract());
        out.add(unknownRetractions());
    }

    // ------------------------------------------------------------------ helpers

    /** Builds SQL, spec and inputs of a GROUP BY case over `input`. */
    static void groupBy(CaseDef c, List<CaseDef.Col> cols, List<String> keys, List<Spec.Agg> aggs, boolean insertOnly) {
        c.inputs.put("input", cols);
        List<Integer> idx = new ArrayList<>();
        for (String k : keys) {
            for (int i = 0; i < cols.size(); i++) {
                if (cols.get(i).name().equals(k)) {
                    idx.add(i);
                }
            }
        }
        c.sql = "SELECT " + String.join(", ", keys) + ", " + Spec.selectList(aggs) + " FROM `input` GROUP BY "
                + String.join(", ", keys);
        c.spec = Spec.groupAgg(idx, aggs, insertOnly);
        c.finalKey = java.util.stream.IntStream.range(0, keys.size()).toArray();
    }

    /** The aggregates of `fns` over `col`, aliased fn_col. */
    static void over(List<Spec.Agg> aggs, List<CaseDef.Col> cols, String col, String... fns) {
        for (String fn : fns) {
            boolean distinct = fn.endsWith("_DISTINCT");
            String f = distinct ? fn.substring(0, fn.length() - "_DISTINCT".length()) : fn;
            String alias = (distinct ? f.toLowerCase() + "_distinct" : f.toLowerCase().replace("_value", "")) + "_" + col;
            aggs.add(agg(f, cols, col, distinct, alias));
        }
    }

    static final String[] ALL_NUMERIC = {"COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE",
        "COUNT_DISTINCT", "SUM_DISTINCT"};

    /** A random retracting changelog: inserts, -U/+U moves, -D, drained and revived groups. */
    static void storm(Live live, int events, Supplier<Object[]> fresh, java.util.function.UnaryOperator<Object[]> move,
            int keyCol, Object[] drainKeys) {
        SplitMix64 r = live.rnd;
        while (live.c.events.size() < events) {
            int p = r.below(100);
            if (live.isEmpty() || p < 38) {
                live.insert(fresh.get());
            } else if (p < 72) {
                int i = live.randomIndex();
                live.update(i, move.apply(live.copy(i)));
            } else if (p < 90) {
                live.delete(live.randomIndex());
            } else if (p < 93) {
                Object k = drainKeys[r.below(drainKeys.length)];
                live.drain(row -> Objects.equals(row[keyCol], k));
            } else {
                Object[] row = fresh.get();
                row[keyCol] = drainKeys[r.below(drainKeys.length)];
                live.insert(row);
            }
        }
    }

    static Integer nullableInt(SplitMix64 r, int pctNull, int lo, int hi) {
        return r.chance(pctNull) ? null : (int) r.range(lo, hi);
    }

    static Long nullableLong(SplitMix64 r, int pctNull, long lo, long hi) {
        return r.chance(pctNull) ? null : r.range(lo, hi);
    }

    static BigDecimal dec(SplitMix64 r, long lo, long hi, int scale) {
        return BigDecimal.valueOf(r.range(lo, hi), scale);
    }

    static final Double[] EXACT_DOUBLES = {-2.5, -1.0, -0.0, 0.0, 0.25, 1.0, 1.5, 3.75};

    static final Double[] DOUBLES = {-2.5, -1.0, -0.0, 0.0, 0.1, 0.25, 1.0, 1.5, 3.75, 1e-7, 123456.789, -98765.4321};

    // ------------------------------------------------------------------ cases

    static CaseDef retractStorm() {
        CaseDef c = new CaseDef("gen_ga_retract_storm", 201, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("v", "BIGINT", true), col("d", "DOUBLE", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "v", "COUNT", "SUM", "MIN", "MAX", "AVG", "COUNT_DISTINCT", "SUM_DISTINCT");
        over(aggs, cols, "d", "SUM", "MIN", "MAX");
        groupBy(c, cols, List.of("k"), aggs, false);
        SplitMix64 r = new SplitMix64(c.seed);
        Live live = new Live(c, "input", r);
        Integer[] keys = {null, 0, 1, 2, 3, 4, 5};
        Supplier<Object[]> fresh = () -> new Object[] {r.pick(keys), nullableLong(r, 10, -20, 20),
            r.chance(10) ? null : r.pick(DOUBLES)};
        storm(live, 1600, fresh, row -> {
            int what = r.below(3);
            if (what != 1) {
                row[0] = r.pick(keys);
            }
            if (what != 0) {
                row[1] = nullableLong(r, 10, -20, 20);
                row[2] = r.chance(10) ? null : r.pick(DOUBLES);
            }
            return row;
        }, 0, new Object[] {1, 2, null});
        c.description = "Retraction storm: a retracting changelog (+I, then many -U/+U pairs that move a row to "
                + "another group and/or change its values, -D of live rows; every retraction matches a live row). "
                + "Groups 1, 2 and the null group are drained to zero rows again and again (Flink emits -D of the "
                + "last result and forgets the group) and revived (+I). COUNT(*), COUNT/SUM/MIN/MAX/AVG/COUNT("
                + "DISTINCT)/SUM(DISTINCT) over a nullable BIGINT with many ties, SUM/MIN/MAX over a nullable DOUBLE "
                + "with -0.0 and 0.0 (MIN_RETRACT/MAX_RETRACT order -0.0 < 0.0 and keep them as distinct values).";
        return c;
    }

    static List<Spec.Agg> nullsAggs(List<CaseDef.Col> cols) {
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "i", ALL_NUMERIC);
        over(aggs, cols, "d", "COUNT", "SUM", "MIN", "MAX", "AVG");
        over(aggs, cols, "m", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE");
        over(aggs, cols, "t", "COUNT", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "COUNT_DISTINCT");
        return aggs;
    }

    static CaseDef nulls(boolean append) {
        CaseDef c = new CaseDef(append ? "gen_ga_nulls_append" : "gen_ga_nulls_retract", append ? 202 : 203,
                "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("s", "STRING", true), col("k2", "INT", true), col("i", "INT", true),
                col("d", "DOUBLE", true), col("m", "DECIMAL(12, 3)", true), col("t", "STRING", true));
        groupBy(c, cols, List.of("s", "k2"), nullsAggs(cols), append);
        SplitMix64 r = new SplitMix64(c.seed);
        String[] ss = {null, "", "a", "allnull", "b"};
        String[] ts = {null, "", "x", "y", "xy", "Zeta", "\u00e9t\u00e9"};
        Supplier<Object[]> fresh = () -> {
            String s = r.pick(ss);
            Integer k2 = r.chance(30) ? null : r.below(2);
            if ("allnull".equals(s)) {
                return new Object[] {s, k2, null, null, null, null};
            }
            return new Object[] {s, k2, nullableInt(r, 40, -50, 50), r.chance(40) ? null : r.pick(DOUBLES),
                r.chance(40) ? null : dec(r, -99999, 99999, 3), r.chance(40) ? null : r.pick(ts)};
        };
        if (append) {
            Live live = new Live(c, "input", r);
            for (int n = 0; n < 600; n++) {
                live.insert(fresh.get());
            }
        } else {
            storm(new Live(c, "input", r), 1200, fresh, row -> {
                Object[] f = fresh.get();
                if (r.chance(50)) {
                    f[0] = row[0];
                    f[1] = row[1];
                }
                return f;
            }, 0, new Object[] {null, "allnull"});
        }
        c.description = (append ? "Insert-only" : "Retracting (+I, -U/+U, -D of live rows; groups drained and "
                + "revived)") + " GROUP BY on a two-column key where both columns are nullable (STRING incl. '' "
                + "and null, INT incl. null: null is an ordinary group value). Nulls everywhere: ~40% null in every "
                + "value column, and group s = 'allnull' has only null values (COUNT(x) = 0, SUM/MIN/MAX/AVG/FIRST/"
                + "LAST null). COUNT(*), and over INT: COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE, "
                + "COUNT(DISTINCT), SUM(DISTINCT); over DOUBLE: COUNT, SUM, MIN, MAX, AVG; over DECIMAL(12, 3): SUM, "
                + "MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE; over STRING: COUNT, MIN, MAX, FIRST_VALUE, LAST_VALUE, "
                + "COUNT(DISTINCT).";
        return c;
    }

    static Object limitOrSmall(SplitMix64 r, boolean limits, long min, long max, Class<?> t) {
        if (r.chance(8)) {
            return null;
        }
        long v;
        if (limits) {
            long[] edge = {max, max - 1, min, min + 1, max / 2 + 1, min / 2 - 1, -1, 1};
            v = edge[r.below(edge.length)];
        } else {
            v = r.range(-30, 30);
        }
        if (t == Long.class) {
            return v;
        } else if (t == Integer.class) {
            return (int) v;
        } else if (t == Short.class) {
            return (short) v;
        }
        return (byte) v;
    }

    static CaseDef integral(boolean append) {
        CaseDef c = new CaseDef(append ? "gen_ga_integral_types_append" : "gen_ga_integral_types_retract",
                append ? 204 : 205, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("g", "INT", false), col("b", "BIGINT", true), col("i", "INT", true),
                col("s", "SMALLINT", true), col("t", "TINYINT", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        for (String x : List.of("b", "i", "s", "t")) {
            over(aggs, cols, x, ALL_NUMERIC);
        }
        groupBy(c, cols, List.of("g"), aggs, append);
        SplitMix64 r = new SplitMix64(c.seed);
        Supplier<Object[]> fresh = () -> {
            int g = r.below(5);
            boolean lim = g == 0 || g == 1;
            return new Object[] {g, limitOrSmall(r, lim, Long.MIN_VALUE, Long.MAX_VALUE, Long.class),
                limitOrSmall(r, lim, Integer.MIN_VALUE, Integer.MAX_VALUE, Integer.class),
                limitOrSmall(r, lim, Short.MIN_VALUE, Short.MAX_VALUE, Short.class),
                limitOrSmall(r, lim, Byte.MIN_VALUE, Byte.MAX_VALUE, Byte.class)};
        };
        if (append) {
            Live live = new Live(c, "input", r);
            for (int n = 0; n < 500; n++) {
                live.insert(fresh.get());
            }
        } else {
            storm(new Live(c, "input", r), 1200, fresh, row -> {
                Object[] f = fresh.get();
                if (r.chance(60)) {
                    f[0] = row[0];
                }
                return f;
            }, 0, new Object[] {3});
        }
        c.description = (append ? "Insert-only" : "Retracting (+I, -U/+U moves, -D; group 3 drained and revived)")
                + " GROUP BY over the four integer types: every aggregate (COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, "
                + "LAST_VALUE, COUNT(DISTINCT), SUM(DISTINCT)) over BIGINT, INT, SMALLINT and TINYINT (nullable). "
                + "Groups 0 and 1 get values at and near each type's limits (MAX, MAX-1, MIN, MIN+1, +-half): SUM, "
                + "SUM(DISTINCT) and AVG wrap around in the argument type (SUM/AVG of SMALLINT is SMALLINT, of TINYINT "
                + "TINYINT; AVG = wrapped sum / count truncated toward zero); groups 2-4 get small values.";
        return c;
    }

    static Object floatVal(SplitMix64 r, boolean special, boolean isFloat) {
        if (r.chance(8)) {
            return null;
        }
        double d;
        if (special) {
            double[] edge = {Double.NaN, -0.0, 0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 1.5, -1.5,
                isFloat ? Float.MAX_VALUE : Double.MAX_VALUE, isFloat ? Float.MIN_VALUE : Double.MIN_VALUE, 0.1};
            d = edge[r.below(edge.length)];
        } else {
            d = r.range(-4000, 4000) / 16.0;
        }
        return isFloat ? (Object) (float) d : (Object) d;
    }

    static CaseDef floatDecimal(boolean append) {
        CaseDef c = new CaseDef(append ? "gen_ga_float_decimal_types_append" : "gen_ga_float_decimal_types_retract",
                append ? 206 : 207, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("g", "INT", false), col("f", "FLOAT", true), col("d", "DOUBLE", true),
                col("dc", "DECIMAL(9, 2)", true), col("dn", "DECIMAL(30, 6)", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        for (String x : List.of("f", "d", "dc", "dn")) {
            over(aggs, cols, x, ALL_NUMERIC);
        }
        groupBy(c, cols, List.of("g"), aggs, append);
        SplitMix64 r = new SplitMix64(c.seed);
        Supplier<Object[]> fresh = () -> {
            int g = r.below(6);
            boolean special = g == 0;
            boolean big = g == 1;
            BigDecimal dc = r.chance(8) ? null
                    : big ? BigDecimal.valueOf(r.chance(50) ? 999999999L : -999999999L, 2) : dec(r, -5000, 5000, 2);
            BigDecimal dn = r.chance(8) ? null
                    : big ? new BigDecimal((r.chance(50) ? "" : "-") + "999999999999999999999999.999999")
                            : dec(r, -9_000_000_000_000L, 9_000_000_000_000L, 6);
            return new Object[] {g, floatVal(r, special, true), floatVal(r, special, false), dc, dn};
        };
        if (append) {
            Live live = new Live(c, "input", r);
            for (int n = 0; n < 500; n++) {
                live.insert(fresh.get());
            }
        } else {
            storm(new Live(c, "input", r), 1200, fresh, row -> {
                Object[] f = fresh.get();
                if (r.chance(60)) {
                    f[0] = row[0];
                }
                return f;
            }, 0, new Object[] {4});
        }
        c.description = (append ? "Insert-only" : "Retracting (+I, -U/+U moves, -D; group 4 drained and revived)")
                + " GROUP BY over FLOAT, DOUBLE, DECIMAL(9, 2) (compact, precision <= 18) and DECIMAL(30, 6) (not "
                + "compact): every aggregate (COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE, COUNT(DISTINCT), "
                + "SUM(DISTINCT)). Group 0 gets NaN, -0.0, 0.0, +-Infinity, MAX_VALUE and MIN_VALUE (sums become NaN/"
                + "Infinity; NaN/-0.0 in MIN/MAX and DISTINCT follow Java's rules); group 1 gets the largest decimals "
                + "of each type (their SUM needs DECIMAL(38, s)); the rest get ordinary values. SUM of FLOAT is FLOAT, "
                + "AVG(FLOAT) FLOAT, SUM(DECIMAL(p, s)) DECIMAL(38, s), AVG(DECIMAL) DECIMAL(38, 6).";
        return c;
    }

    static CaseDef stringRetract() {
        CaseDef c = new CaseDef("gen_ga_string_retract", 208, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("t", "STRING", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "t", "COUNT", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "COUNT_DISTINCT");
        groupBy(c, cols, List.of("k"), aggs, false);
        SplitMix64 r = new SplitMix64(c.seed);
        String[] ts = {null, "", "a", "A", "ab", "b", "ba", "zz", "\u00e4", "\u4e2d", "a\u0000b", "longer string 01"};
        Integer[] ks = {null, 0, 1, 2};
        storm(new Live(c, "input", r), 900, () -> new Object[] {r.pick(ks), r.pick(ts)}, row -> {
            row[r.below(2)] = r.chance(50) ? r.pick(ks) : null;
            row[1] = r.pick(ts);
            return row;
        }, 0, new Object[] {2});
        c.description = "Retracting GROUP BY over a nullable STRING (incl. '', case, non-ASCII, an embedded NUL): "
                + "COUNT, MIN/MAX with retraction (String.compareTo order, UTF-16 code units), FIRST_VALUE and "
                + "LAST_VALUE with retraction, COUNT(DISTINCT); -U/+U pairs move rows between groups (incl. the null "
                + "group); group 2 is drained and revived.";
        return c;
    }

    static CaseDef largeGroup() {
        CaseDef c = new CaseDef("gen_ga_large_group", 209, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", false), col("v", "BIGINT", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "v", "SUM", "MIN", "MAX", "COUNT_DISTINCT");
        groupBy(c, cols, List.of("k"), aggs, false);
        SplitMix64 r = new SplitMix64(c.seed);
        Live live = new Live(c, "input", r);
        for (int n = 0; n < 2600; n++) {
            live.insert(new Object[] {r.chance(95) ? 0 : 1 + r.below(2), r.range(-100000, 100000)});
        }
        // retract the current minimum of group 0 repeatedly (MIN_RETRACT recomputes over all entries)
        for (int n = 0; n < 300; n++) {
            int best = -1;
            for (int i = 0; i < live.rows.size(); i++) {
                Object[] row = live.rows.get(i);
                if ((Integer) row[0] == 0 && (best < 0 || (Long) row[1] < (Long) live.rows.get(best)[1])) {
                    best = i;
                }
            }
            if (n % 3 == 2) {
                live.update(best, new Object[] {0, r.range(-200000, 200000)});
            } else {
                live.delete(best);
            }
        }
        for (int n = 0; n < 200; n++) {
            live.delete(live.randomIndex());
        }
        c.description = "Large group: group 0 receives ~2500 rows (groups 1 and 2 a few dozen), then its current "
                + "MIN is retracted 300 times in a row (-D, every third one -U/+U to a new value), so MIN_RETRACT "
                + "must find the next minimum among thousands of entries each time, then 200 random -D. COUNT(*), "
                + "SUM, MIN, MAX, COUNT(DISTINCT) over BIGINT.";
        return c;
    }

    static CaseDef miniBatch(boolean append) {
        CaseDef c = new CaseDef(append ? "gen_ga_minibatch_append" : "gen_ga_minibatch_retract_storm",
                append ? 211 : 210, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("v", "BIGINT", true), col("d", "DOUBLE", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        if (append) {
            over(aggs, cols, "v", "COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE", "COUNT_DISTINCT");
            over(aggs, cols, "d", "SUM", "MAX", "AVG");
        } else {
            over(aggs, cols, "v", "COUNT", "SUM", "MIN", "MAX", "AVG", "COUNT_DISTINCT", "SUM_DISTINCT");
            over(aggs, cols, "d", "SUM", "MIN");
        }
        groupBy(c, cols, List.of("k"), aggs, append);
        c.miniBatch = true;
        c.fin(MINI_BATCH_REASON);
        SplitMix64 r = new SplitMix64(c.seed);
        Integer[] keys = {null, 0, 1, 2, 3, 4, 5, 6, 7};
        // exact (dyadic, small) doubles only: a DOUBLE sum over inexact values depends on where the bundles
        // split (local + global partial sums round differently), and two runs then disagree in the last digits
        Supplier<Object[]> fresh = () -> new Object[] {r.pick(keys), nullableLong(r, 10, -1000, 1000),
            r.chance(10) ? null : r.pick(EXACT_DOUBLES)};
        Live live = new Live(c, "input", r);
        if (append) {
            for (int n = 0; n < 2000; n++) {
                live.insert(fresh.get());
            }
        } else {
            storm(live, 2400, fresh, row -> {
                row[0] = r.pick(keys);
                row[1] = nullableLong(r, 10, -1000, 1000);
                return row;
            }, 0, new Object[] {6, 7});
            live.drain(row -> Objects.equals(row[0], 7));
        }
        c.description = "Mini-batch on (allow-latency 1 s, size 5000; Flink's AUTO agg-phase strategy picks the "
                + "plan: " + (append ? "one phase, MiniBatchAssigner -> GroupAggregate, because FIRST_VALUE/"
                        + "LAST_VALUE cannot be split into local/global" : "LocalGroupAggregate -> "
                        + "GlobalGroupAggregate") + ") over " + (append
                        ? "an insert-only input: COUNT(*), COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE, "
                        + "COUNT(DISTINCT) over BIGINT and SUM/MAX/AVG over DOUBLE; nullable key (null group)."
                        : "a retraction storm (-U/+U moves, -D, groups 6 and 7 drained and revived; group 7 ends "
                        + "with zero rows, so it is absent from the final table): COUNT(*), COUNT, SUM, MIN, MAX, "
                        + "AVG, COUNT(DISTINCT), SUM(DISTINCT) over BIGINT, SUM/MIN over DOUBLE; nullable key.")
                + " The DOUBLE values are exact multiples of 0.25 (incl. -0.0): with inexact doubles the final SUM "
                + "depends on where Flink's bundles split (local partial sums, then the global merge, round "
                + "differently), so two runs of the same input disagreed in the last digits.";
        return c;
    }

    static CaseDef upsertRetract() {
        CaseDef c = new CaseDef("gen_ga_upsert_retract", 212, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", false), col("v", "INT", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "v", "SUM", "MIN", "MAX", "AVG");
        groupBy(c, cols, List.of("k"), aggs, false);
        c.upsertKey = List.of("k");
        SplitMix64 r = new SplitMix64(c.seed);
        Integer[] keys = {0, 1, 2, 3, 4};
        storm(new Live(c, "input", r), 700, () -> new Object[] {r.pick(keys), nullableInt(r, 10, -9, 9)}, row -> {
            row[r.below(2)] = null;
            row[0] = r.pick(keys);
            row[1] = nullableInt(r, 10, -9, 9);
            return row;
        }, 0, new Object[] {3, 4});
        c.description = "Retracting input collected in upsert mode (toChangelogStream(..., ChangelogMode.upsert()), "
                + "primary key = the NOT NULL group key): a changed group is a single +U (no -U), a group whose row "
                + "count reaches zero is -D (groups 3 and 4 are drained and revived; revival is +I again). COUNT(*), "
                + "SUM, MIN, MAX, AVG over a nullable INT.";
        return c;
    }

    static CaseDef unknownRetractions() {
        CaseDef c = new CaseDef("gen_ga_unknown_retractions_storm", 213, "group_aggregate");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("v", "BIGINT", true));
        List<Spec.Agg> aggs = new ArrayList<>();
        aggs.add(countStar("cnt"));
        over(aggs, cols, "v", "COUNT", "SUM", "MIN", "MAX", "COUNT_DISTINCT");
        groupBy(c, cols, List.of("k"), aggs, false);
        SplitMix64 r = new SplitMix64(c.seed);
        Live live = new Live(c, "input", r);
        Integer[] keys = {null, 0, 1, 2, 3};
        while (c.events.size() < 900) {
            int p = r.below(100);
            if (live.isEmpty() || p < 40) {
                live.insert(new Object[] {r.pick(keys), nullableLong(r, 10, 0, 12)});
            } else if (p < 60) {
                int i = live.randomIndex();
                live.update(i, new Object[] {r.pick(keys), nullableLong(r, 10, 0, 12)});
            } else if (p < 80) {
                live.delete(live.randomIndex());
            } else {
                // a retraction of a row that is not live: a value never used (100..105) or a dead group (7, 8)
                Object[] row = r.chance(50) ? new Object[] {r.pick(keys), r.range(100, 105)}
                        : new Object[] {7 + r.below(2), r.range(0, 12)};
                live.retractUnknown(row, r.chance(70) ? RowKind.DELETE : RowKind.UPDATE_BEFORE);
            }
        }
        c.description = "A retracting changelog mixed with ~20% retractions of rows that were never inserted: "
                + "-D/-U (without a following +U) of values 100..105 that no live row has, in live groups (Flink "
                + "retracts them anyway: COUNT(*)/COUNT/SUM drop, MIN_RETRACT/MAX_RETRACT and the DISTINCT map keep "
                + "negative counts; COUNT(*) may reach 0 and the group is -D and forgotten although real rows were "
                + "live, whose later retractions are then ignored), and -D/-U for groups 7 and 8 that never had a "
                + "row (no state: ignored). Nullable INT key, nullable BIGINT value.";
        return c;
    }
}
