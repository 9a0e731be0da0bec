package flinkoperators;

import static flinkoperators.CaseDef.col;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** Top-1 (operator "top1") and Top-N (operator "topn", this harness's schema extension) cases. */
final class RankCases {
    private RankCases() {}

    static void all(List<CaseDef> out) {
        out.add(top1NanZeroDesc());
        out.add(top1AscNullsFirst());
        out.add(top1DescNullsFirst());
        out.add(top1TwoColumns(true));
        out.add(top1TwoColumns(false));
        out.add(top1AscUpsert());
        out.add(topN("gen_topn_rownum3_append_rank", 230, "ROW_NUMBER", 3, true, true, 600));
        out.add(topN("gen_topn_rownum3_append_norank", 231, "ROW_NUMBER", 3, false, true, 600));
        out.add(topN("gen_topn_rownum3_retract_rank", 232, "ROW_NUMBER", 3, true, false, 900));
        out.add(topN("gen_topn_rownum3_retract_norank", 233, "ROW_NUMBER", 3, false, false, 900));
        out.add(topN("gen_topn_rownum100_append_rank", 234, "ROW_NUMBER", 100, true, true, 160));
        out.add(topN("gen_topn_rownum100_retract_norank", 235, "ROW_NUMBER", 100, false, false, 1400));
        // RANK() / DENSE_RANK() <= N (seeds 236-238) are not generated: Flink 2.3.0's planner rejects them on
        // streaming tables ("TableException: RANK() on streaming table is not supported currently").
    }

    /** One ORDER BY item: input column index, column name, DESC, NULLS LAST. */
    record Ord(int column, String name, boolean desc, boolean nullsLast) {
        String sql() {
            return name + (desc ? " DESC" : " ASC") + (nullsLast ? " NULLS LAST" : " NULLS FIRST");
        }
    }

    static void rankQuery(CaseDef c, List<CaseDef.Col> cols, String partition, List<Ord> order, String function,
            int limit, boolean rankNumber) {
        c.inputs.put("input", cols);
        List<String> ob = new ArrayList<>();
        List<Object> obJson = new ArrayList<>();
        for (Ord o : order) {
            ob.add(o.sql());
            obJson.add(Spec.order(o.column(), o.desc(), o.nullsLast()));
        }
        List<String> names = new ArrayList<>();
        int pIdx = -1;
        for (int i = 0; i < cols.size(); i++) {
            names.add(cols.get(i).name());
            if (cols.get(i).name().equals(partition)) {
                pIdx = i;
            }
        }
        String inner = "SELECT *, " + function + "() OVER (PARTITION BY " + partition + " ORDER BY "
                + String.join(", ", ob) + ") AS rn FROM `input`";
        String where = limit == 1 ? "rn = 1" : "rn <= " + limit;
        c.sql = "SELECT " + (rankNumber ? "*" : String.join(", ", names)) + " FROM (" + inner + ") WHERE " + where;
        c.spec = Spec.rank(List.of(pIdx), obJson, limit, limit == 1 ? null : function, rankNumber);
        if (limit == 1) {
            c.finalKey = new int[] {pIdx};
        }
    }

    static final Double[] NAN_ZERO = {Double.NaN, -0.0, 0.0, 1.0, -1.0, 2.5, 2.5, null, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY};

    static void appendRows(CaseDef c, int n, Supplier<Object[]> fresh) {
        Live live = new Live(c, "input", null);
        for (int i = 0; i < n; i++) {
            live.insert(fresh.get());
        }
    }

    static CaseDef top1NanZeroDesc() {
        CaseDef c = new CaseDef("gen_top1_double_desc_nan_zero", 220, "top1");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("id", "BIGINT", false), col("v", "DOUBLE", true));
        rankQuery(c, cols, "k", List.of(new Ord(2, "v", true, true)), "ROW_NUMBER", 1, true);
        SplitMix64 r = new SplitMix64(c.seed);
        Integer[] ks = {null, 0, 1, 2, 3, 4, 5, 6, 7};
        long[] id = {0};
        appendRows(c, 500, () -> new Object[] {r.pick(ks), id[0]++, r.pick(NAN_ZERO)});
        c.description = "ROW_NUMBER() = 1 per nullable INT key ORDER BY v DESC NULLS LAST on insert-only input, "
                + "rank column selected, DOUBLE order column full of NaN, -0.0, 0.0, +-Infinity, ties and nulls: "
                + "Flink compares doubles with < / > here, so a NaN winner is never replaced and a NaN never wins, "
                + "-0.0 ties with 0.0 (the earlier row stays), a null never beats a value (NULLS LAST) but a value "
                + "replaces a null winner. One DESC column: planned with updates (-U/+U).";
        return c;
    }

    static CaseDef top1AscNullsFirst() {
        CaseDef c = new CaseDef("gen_top1_double_asc_nulls_first", 221, "top1");
        List<CaseDef.Col> cols = List.of(col("k", "STRING", false), col("id", "BIGINT", false),
                col("v", "DOUBLE", true), col("p", "INT", true));
        rankQuery(c, cols, "k", List.of(new Ord(2, "v", false, false)), "ROW_NUMBER", 1, false);
        SplitMix64 r = new SplitMix64(c.seed);
        String[] ks = {"a", "b", "c", "d", "e", "f"};
        long[] id = {0};
        appendRows(c, 400, () -> new Object[] {r.pick(ks), id[0]++, r.chance(5) ? null : r.pick(NAN_ZERO),
            (int) r.range(0, 9)});
        c.description = "ROW_NUMBER() = 1 ORDER BY v ASC NULLS FIRST (DOUBLE with NaN, +-0.0, +-Infinity, ties; nulls "
                + "rare, so most partitions first see values and then a null wins, as NULLS FIRST sorts it before "
                + "every value) without the rank column. Not a single DESC column, so the Rank is insert-only "
                + "(changelogMode=[I]) and a new winner is +U alone.";
        return c;
    }

    static CaseDef top1DescNullsFirst() {
        CaseDef c = new CaseDef("gen_top1_desc_nulls_first", 222, "top1");
        List<CaseDef.Col> cols = List.of(col("k", "INT", false), col("id", "BIGINT", false), col("v", "BIGINT", true));
        rankQuery(c, cols, "k", List.of(new Ord(2, "v", true, false)), "ROW_NUMBER", 1, true);
        SplitMix64 r = new SplitMix64(c.seed);
        long[] id = {0};
        appendRows(c, 400, () -> new Object[] {r.below(8), id[0]++, r.chance(4) ? null : r.range(-50, 50)});
        c.description = "ROW_NUMBER() = 1 ORDER BY v DESC NULLS FIRST (not Flink's default null direction for DESC) "
                + "with the rank column: a null v beats every value and, once the winner, is never replaced (ties "
                + "keep the earlier row); BIGINT order column with ties.";
        return c;
    }

    static CaseDef top1TwoColumns(boolean rankNumber) {
        CaseDef c = new CaseDef(rankNumber ? "gen_top1_two_columns_rank" : "gen_top1_two_columns_norank",
                rankNumber ? 223 : 224, "top1");
        List<CaseDef.Col> cols = List.of(col("k", "INT", true), col("id", "BIGINT", false), col("a", "INT", true),
                col("b", "DOUBLE", true));
        List<Ord> order = rankNumber ? List.of(new Ord(2, "a", true, true), new Ord(3, "b", false, true))
                : List.of(new Ord(3, "b", true, false), new Ord(2, "a", true, true));
        rankQuery(c, cols, "k", order, "ROW_NUMBER", 1, rankNumber);
        SplitMix64 r = new SplitMix64(c.seed);
        Integer[] ks = {null, 0, 1, 2, 3, 4};
        long[] id = {0};
        appendRows(c, 450, () -> new Object[] {r.pick(ks), id[0]++, r.chance(8) ? null : (int) r.range(0, 6),
            r.pick(NAN_ZERO)});
        c.description = "ROW_NUMBER() = 1 with a two-column ORDER BY (" + (rankNumber
                ? "a DESC NULLS LAST, b ASC NULLS LAST, rank column selected" : "b DESC NULLS FIRST, a DESC NULLS "
                + "LAST, without the rank column") + "): the second column breaks ties of the first; rows equal on "
                + "both (or tied through NaN / +-0.0 in the DOUBLE b) keep the earlier row. Two order columns make "
                + "the Rank insert-only (changelogMode=[I]): +I, then +U alone. Nullable INT partition key.";
        return c;
    }

    static CaseDef top1AscUpsert() {
        CaseDef c = new CaseDef("gen_top1_asc_upsert", 225, "top1");
        List<CaseDef.Col> cols = List.of(col("k", "INT", false), col("id", "BIGINT", false), col("v", "DOUBLE", true));
        rankQuery(c, cols, "k", List.of(new Ord(2, "v", false, true)), "ROW_NUMBER", 1, true);
        c.upsertKey = List.of("k");
        SplitMix64 r = new SplitMix64(c.seed);
        long[] id = {0};
        appendRows(c, 350, () -> new Object[] {r.below(6), id[0]++, r.pick(NAN_ZERO)});
        c.description = "ROW_NUMBER() = 1 ORDER BY v ASC NULLS LAST with the rank column, collected in upsert mode "
                + "(primary key = the NOT NULL partition key): a new winner is +U alone; DOUBLE order column with "
                + "NaN, +-0.0, +-Infinity, ties and nulls.";
        return c;
    }

    static CaseDef topN(String name, long seed, String function, int n, boolean rankNumber, boolean append, int rows) {
        CaseDef c = new CaseDef(name, seed, "topn");
        List<CaseDef.Col> cols = List.of(col("k", "STRING", true), col("id", "BIGINT", false), col("v", "BIGINT", true),
                col("w", "INT", true));
        boolean big = n > 3;
        List<Ord> order = big ? List.of(new Ord(2, "v", false, true))
                : List.of(new Ord(2, "v", true, true), new Ord(3, "w", false, true));
        rankQuery(c, cols, "k", order, function, n, rankNumber);
        SplitMix64 r = new SplitMix64(c.seed);
        String[] ks = big ? new String[] {"p", "q"} : new String[] {null, "a", "b", "c", "d", "e"};
        long[] id = {0};
        int vRange = function.equals("ROW_NUMBER") ? (big ? 400 : 30) : 8;
        Supplier<Object[]> fresh = () -> new Object[] {r.pick(ks), id[0]++,
            r.chance(5) ? null : r.range(0, vRange), r.chance(5) ? null : (int) r.range(0, 3)};
        Live live = new Live(c, "input", r);
        if (append) {
            for (int i = 0; i < rows; i++) {
                live.insert(fresh.get());
            }
        } else {
            while (c.events.size() < rows) {
                int p = r.below(100);
                if (live.isEmpty() || p < 55) {
                    live.insert(fresh.get());
                } else if (p < 80) {
                    int i = live.randomIndex();
                    Object[] row = live.copy(i);
                    row[2] = r.chance(5) ? null : r.range(0, vRange);
                    live.update(i, row);
                } else {
                    live.delete(live.randomIndex());
                }
            }
        }
        String orderText = big ? "v ASC NULLS LAST (BIGINT, ties)" : "v DESC NULLS LAST, w ASC NULLS LAST (ties)";
        c.description = function + "() <= " + n + " per nullable STRING key ORDER BY " + orderText + " over "
                + (append ? "an insert-only input" : "a retracting input (+I, -U/+U changing the order value, -D; "
                        + "every retraction matches a live row)")
                + (rankNumber ? ", rank column selected (a row entering the top shifts the ranks of the rows behind "
                        + "it: -U/+U, or -D/+I as Flink emits them)" : ", without the rank column")
                + ". Operator \"topn\" (this harness's schema extension, see testdata/flink-operator-cases/"
                + "GENERATED.md); output = input columns (+ rn BIGINT).";
        return c;
    }
}
