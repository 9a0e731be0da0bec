package flinkoperators;

import static flinkoperators.CaseDef.col;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.types.RowKind;

/** Regular INNER join cases (paced two-input replay). */
final class JoinCases {
    private JoinCases() {}

    static final String REASON = "Flink emits the matches of one input row in the iteration order of the other "
            + "side's join state (a Java HashMap of BinaryRowData records in the HashMap backend; key-byte order in "
            + "RocksDB), so only the materialised result is backend-independent. The stream is still in input order "
            + "burst by burst: the rows caused by one input row are contiguous, and equal to Flink's as a multiset.";

    static void all(List<CaseDef> out) {
        out.add(dupNullRetract());
        out.add(identicalBursts());
        out.add(twoKeysNonEqui());
    }

    /** One side's random retracting changelog step; ~pctUnknown% retractions of rows never inserted. */
    static void step(Live live, SplitMix64 r, java.util.function.Supplier<Object[]> fresh, int pctUnknown) {
        int p = r.below(100);
        if (p < pctUnknown) {
            Object[] row = fresh.get();
            boolean isLive = live.rows.stream().anyMatch(x -> java.util.Arrays.equals(x, row));
            if (!isLive) {
                live.retractUnknown(row, r.chance(60) ? RowKind.DELETE : RowKind.UPDATE_BEFORE);
                return;
            }
        }
        if (live.isEmpty() || p < 50) {
            Object[] row = !live.isEmpty() && r.chance(30) ? live.copy(live.randomIndex()) : fresh.get();
            live.insert(row);
        } else if (p < 75) {
            live.update(live.randomIndex(), fresh.get());
        } else {
            live.delete(live.randomIndex());
        }
    }

    static CaseDef dupNullRetract() {
        CaseDef c = new CaseDef("gen_join_dup_null_retract", 240, "join");
        c.input("left", col("lk", "INT", true), col("lv", "STRING", true));
        c.input("right", col("rk", "INT", true), col("rv", "BIGINT", true));
        c.sql = "SELECT * FROM `left` JOIN `right` ON `left`.lk = `right`.rk";
        c.spec = Spec.join(List.of(0), List.of(0), null);
        c.fin(REASON);
        SplitMix64 r = new SplitMix64(c.seed);
        Live left = new Live(c, "left", r);
        Live right = new Live(c, "right", r);
        Integer[] ks = {null, 0, 1, 2, 3, 4, 5};
        String[] vs = {null, "a", "b", "c"};
        while (c.events.size() < 700) {
            if (r.chance(50)) {
                step(left, r, () -> new Object[] {r.pick(ks), r.pick(vs)}, 10);
            } else {
                step(right, r, () -> new Object[] {r.pick(ks), r.chance(10) ? null : r.range(0, 4)}, 10);
            }
        }
        c.description = "Regular INNER equi-join, both inputs retracting: exact duplicate rows (a third of the "
                + "inserts copy a live row), null join keys on both sides (never match), -U/+U and -D of live rows, "
                + "and ~10% retractions (-D, or -U without +U) of rows never inserted on either side: they still "
                + "retract their matches with the other side and leave the state unchanged.";
        return c;
    }

    static CaseDef identicalBursts() {
        CaseDef c = new CaseDef("gen_join_identical_bursts_changelog", 241, "join");
        c.input("left", col("la", "INT", true), col("lb", "STRING", true), col("lv", "INT", true));
        c.input("right", col("ra", "INT", true), col("rb", "STRING", true), col("rv", "DOUBLE", true));
        c.sql = "SELECT * FROM `left` JOIN `right` ON `left`.la = `right`.ra AND `left`.lb = `right`.rb";
        c.spec = Spec.join(List.of(0, 1), List.of(0, 1), null);
        SplitMix64 r = new SplitMix64(c.seed);
        Integer[] as = {null, 0, 1, 2, 3};
        String[] bs = {null, "x", "y"};
        // one distinct row per join key and side, so every output burst is identical rows
        Map<String, Object[]> leftRow = new HashMap<>();
        Map<String, Object[]> rightRow = new HashMap<>();
        Map<String, Integer> leftCount = new HashMap<>();
        Map<String, Integer> rightCount = new HashMap<>();
        for (Integer a : as) {
            for (String b : bs) {
                String k = a + "/" + b;
                leftRow.put(k, new Object[] {a, b, r.chance(10) ? null : (int) r.range(0, 99)});
                rightRow.put(k, new Object[] {a, b, r.chance(10) ? null : r.range(-8, 8) / 4.0});
            }
        }
        RowKind[] retract = {RowKind.DELETE, RowKind.UPDATE_BEFORE};
        while (c.events.size() < 600) {
            boolean isLeft = r.chance(50);
            String k = r.pick(as) + "/" + r.pick(bs);
            Map<String, Integer> cnt = isLeft ? leftCount : rightCount;
            Object[] row = (isLeft ? leftRow : rightRow).get(k);
            int have = cnt.getOrDefault(k, 0);
            int p = r.below(100);
            if (p < 55) {
                c.add(isLeft ? "left" : "right", p < 45 ? RowKind.INSERT : RowKind.UPDATE_AFTER, row);
                cnt.put(k, have + 1);
            } else {
                // a retraction; when no copy is live it is a retraction of a row never inserted (state unchanged)
                c.add(isLeft ? "left" : "right", r.pick(retract), row);
                if (have > 0) {
                    cnt.put(k, have - 1);
                }
            }
        }
        c.description = "INNER equi-join on two key columns (INT, STRING; nulls never match), both sides "
                + "retracting, built so that each join key holds copies of exactly one distinct row per side: every "
                + "output burst is identical rows, so the changelog is comparable row for row. Each input RowKind "
                + "(+I, -U, +U, -D) gives output rows of the same kind, one per stored copy on the other side; "
                + "retractions of a row with no live copy (never inserted, or all copies already retracted) still "
                + "retract their matches and leave the state unchanged.";
        return c;
    }

    static CaseDef twoKeysNonEqui() {
        CaseDef c = new CaseDef("gen_join_two_keys_non_equi", 242, "join");
        c.input("left", col("lk", "STRING", true), col("lg", "INT", false), col("lv", "BIGINT", true));
        c.input("right", col("rk", "STRING", true), col("rg", "INT", false), col("rv", "BIGINT", true));
        c.sql = "SELECT * FROM `left` JOIN `right` ON `left`.lk = `right`.rk AND `left`.lg = `right`.rg "
                + "AND `left`.lv < `right`.rv";
        c.spec = Spec.join(List.of(0, 1), List.of(0, 1), "`left`.lv < `right`.rv");
        c.fin(REASON);
        SplitMix64 r = new SplitMix64(c.seed);
        Live left = new Live(c, "left", r);
        Live right = new Live(c, "right", r);
        String[] ks = {null, "", "a", "b"};
        while (c.events.size() < 600) {
            Live side = r.chance(50) ? left : right;
            step(side, r, () -> new Object[] {r.pick(ks), r.below(2), r.chance(10) ? null : r.range(0, 6)}, 8);
        }
        c.description = "INNER join on two key columns (nullable STRING incl. '' and null, NOT NULL INT) with a "
                + "non-equi condition lv < rv on nullable BIGINTs (a null on either side never matches): both sides "
                + "retracting with duplicates and ~8% retractions of rows never inserted.";
        return c;
    }
}
