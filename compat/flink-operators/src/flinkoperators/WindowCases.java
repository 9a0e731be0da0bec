package flinkoperators;

import static flinkoperators.CaseDef.col;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongPredicate;

/** Event-time window TVF aggregates over one insert-only input with source watermarks. */
final class WindowCases {
    private WindowCases() {}

    static final String REASON = "Insert-only output. Rows are emitted when the watermark passes window_end - 1; "
            + "rows that fire on the same watermark come out in Flink's event-time timer heap order (ascending "
            + "window end, ties between keys in binary-heap order, not sorted by key), so the multiset is the "
            + "contract.";

    /** 2024-03-10T00:00:00Z. */
    static final long BASE = 1710028800000L;

    static void all(List<CaseDef> out) {
        out.add(tumbleEdges());
        out.add(hop4x());
        out.add(cumulateKolkata());
        out.add(tumbleOffset());
        out.add(retract("gen_window_tumble_retract", 254, "TUMBLE", aggs(cols(false), true)));
        out.add(retract("gen_window_hop_retract", 255, "HOP", aggs(cols(false), true)));
        out.add(retract("gen_window_cumulate_retract", 256, "CUMULATE", aggs(cols(false), true)));
        out.add(retract("gen_window_tumble_first_last_retract", 257, "TUMBLE", firstLast(cols(false))));
        // FIRST_VALUE / LAST_VALUE in HOP or CUMULATE (insert-only or retracting) is refused by Flink 2.3.0's
        // planner ("Could not find an implementation method 'merge' in class ...FirstValueAggFunction"), so there
        // is no such case (see GENERATED.md).
    }

    static List<Spec.Agg> firstLast(List<CaseDef.Col> cols) {
        List<Spec.Agg> a = new ArrayList<>();
        a.add(Spec.countStar("cnt"));
        a.add(Spec.agg("FIRST_VALUE", cols, "v", false, "first_v"));
        a.add(Spec.agg("LAST_VALUE", cols, "v", false, "last_v"));
        return a;
    }

    /** The TVF call of a 10 s TUMBLE, a HOP of slide 5 s and size 20 s, or a CUMULATE of step 10 s up to 40 s. */
    static String tvf(String kind) {
        return switch (kind) {
            case "TUMBLE" -> "TUMBLE(TABLE `input`, DESCRIPTOR(ts), INTERVAL '10' SECOND)";
            case "HOP" -> "HOP(TABLE `input`, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '20' SECOND)";
            default -> "CUMULATE(TABLE `input`, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '40' SECOND)";
        };
    }

    static long size(String kind) {
        return kind.equals("TUMBLE") ? 10000 : kind.equals("HOP") ? 20000 : 40000;
    }

    static long slide(String kind) {
        return kind.equals("TUMBLE") ? 0 : kind.equals("HOP") ? 5000 : 10000;
    }

    /**
     * A window aggregate over a retracting input (declared ChangelogMode.all()): +I rows as in generate(), and
     * retractions (-D, or -U/+U with a new value) of live rows, some of them after their window fired, plus
     * retractions of rows never inserted.
     */
    static CaseDef retract(String name, long seed, String kind, List<Spec.Agg> aggs) {
        CaseDef c = new CaseDef(name, seed, "window_aggregate");
        List<CaseDef.Col> cols = cols(false);
        windowQuery(c, cols, tvf(kind), kind, size(kind), slide(kind), 0, aggs);
        SplitMix64 r = new SplitMix64(c.seed);
        String[] ks = {"a", "b", "c"};
        long grid = kind.equals("TUMBLE") ? 10000 : slide(kind);
        List<Object[]> live = new ArrayList<>();
        long maxTs = BASE;
        long wm = Long.MIN_VALUE;
        int untilWm = 6;
        for (int n = 0; n < 700; n++) {
            int p = r.below(100);
            if (p < 25 && !live.isEmpty()) {
                // retract a live row: -D, or -U then +U of the same row with another value
                Object[] old = live.remove(r.below(live.size()));
                if (r.chance(50)) {
                    c.add("input", org.apache.flink.types.RowKind.DELETE, old);
                } else {
                    c.add("input", org.apache.flink.types.RowKind.UPDATE_BEFORE, old);
                    Object[] nu = {old[0], r.chance(10) ? null : (int) r.range(-50, 100), old[2]};
                    c.add("input", org.apache.flink.types.RowKind.UPDATE_AFTER, nu);
                    live.add(nu);
                }
            } else if (p < 29) {
                // a retraction of a row never inserted
                c.add("input", org.apache.flink.types.RowKind.DELETE, r.pick(ks), (int) r.range(200, 210),
                        ts(maxTs - r.range(0, 2 * grid), false));
            } else {
                long t;
                if (p < 32) {
                    maxTs += grid * (2 + r.below(3));
                    t = maxTs;
                } else if (p < 42) {
                    t = maxTs - r.range(0, 2 * grid);
                } else {
                    maxTs += r.range(0, grid / 4);
                    t = maxTs;
                }
                if (r.chance(15)) {
                    long start = Math.floorDiv(t, grid) * grid;
                    t = r.chance(50) ? start : start - 1;
                }
                Object[] row = {r.pick(ks), r.chance(8) ? null : (int) r.range(-20, 40), ts(t, false)};
                c.add("input", org.apache.flink.types.RowKind.INSERT, row);
                live.add(row);
            }
            if (--untilWm == 0) {
                untilWm = 5 + r.below(10);
                long end = Math.floorDiv(maxTs, grid) * grid;
                long[] choice = {maxTs - grid / 5, end - 1, end, end - 2, end + 1};
                long w = choice[r.below(choice.length)];
                if (w > wm) {
                    c.watermark(w);
                    wm = w;
                }
            }
        }
        c.watermark(Long.MAX_VALUE);
        c.description = kind + " on TIMESTAMP(3) over a retracting input (ChangelogMode.all()): +I rows, -D and "
                + "-U/+U of live rows (also after their window fired: late retractions), -D of rows never "
                + "inserted; watermarks at slice edges. Aggregates: " + Spec.selectList(aggs) + ".";
        return c;
    }

    static List<Spec.Agg> aggs(List<CaseDef.Col> cols, boolean distinct) {
        List<Spec.Agg> a = new ArrayList<>();
        a.add(Spec.countStar("cnt"));
        a.add(Spec.agg("SUM", cols, "v", false, "sum_v"));
        a.add(Spec.agg("MIN", cols, "v", false, "min_v"));
        a.add(Spec.agg("MAX", cols, "v", false, "max_v"));
        if (distinct) {
            a.add(Spec.agg("COUNT", cols, "v", true, "cd_v"));
        }
        return a;
    }

    static void windowQuery(CaseDef c, List<CaseDef.Col> cols, String tvf, String kind, long size, long slide,
            long offset, List<Spec.Agg> aggs) {
        c.inputs.put("input", cols);
        c.rowtime.put("input", "ts");
        c.sql = "SELECT k, " + Spec.selectList(aggs) + ", window_start, window_end FROM TABLE(" + tvf + ") GROUP BY "
                + "k, window_start, window_end";
        c.spec = Spec.window(kind, 2, size, slide, offset, List.of(0), aggs);
        c.fin(REASON);
    }

    static Object ts(long millis, boolean ltz) {
        Instant i = Instant.ofEpochMilli(millis);
        return ltz ? (Object) i : (Object) LocalDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    /**
     * Rows with a running max event time; late and out-of-order rows; rows snapped onto window boundaries;
     * watermarks every few rows, often exactly at a window end - 1 or end, sometimes after a jump over several
     * windows (also at UTC-aligned grid ends, which differ from window ends in the offset and LTZ cases).
     * allowed rejects watermark positions (the LTZ data-loss gaps).
     */
    static void generate(CaseDef c, SplitMix64 r, int rows, long grid, long gridOffset, long maxLate, boolean ltz,
            LongPredicate allowed) {
        String[] ks = {"a", "b", "c"};
        long maxTs = BASE;
        long wm = Long.MIN_VALUE;
        int untilWm = 5;
        for (int n = 0; n < rows; n++) {
            long t;
            int p = r.below(100);
            if (p < 3) {
                maxTs += grid * (2 + r.below(4)); // a jump: the next watermark fires several windows at once
                t = maxTs;
            } else if (p < 15) {
                t = maxTs - r.range(0, maxLate); // late or out of order
            } else {
                maxTs += r.range(0, grid / 4);
                t = maxTs;
            }
            if (r.chance(20)) { // onto a boundary: the first or the last millisecond of a window
                long start = Math.floorDiv(t - gridOffset, grid) * grid + gridOffset;
                t = r.chance(50) ? start : start - 1;
            }
            if (wm != Long.MIN_VALUE && r.chance(30) && t > wm - 3 * grid) {
                t = wm - r.range(0, 2); // exactly at or just behind the watermark
            }
            c.add("input", org.apache.flink.types.RowKind.INSERT, r.pick(ks), r.chance(8) ? null
                    : (int) r.range(-50, 100), ts(t, ltz));
            if (--untilWm == 0) {
                untilWm = 4 + r.below(10);
                long end = Math.floorDiv(maxTs - gridOffset, grid) * grid + gridOffset;
                long utcEnd = Math.floorDiv(maxTs, grid) * grid; // differs from end only with an offset
                long[] choice = {maxTs - grid / 5, end - 1, end, end - 2, end + 1, utcEnd - 1, utcEnd};
                long w = choice[r.below(choice.length)];
                if (w > wm && allowed.test(w)) {
                    c.watermark(w);
                    wm = w;
                }
            }
        }
        c.watermark(Long.MAX_VALUE);
    }

    static List<CaseDef.Col> cols(boolean ltz) {
        return List.of(col("k", "STRING", false), col("v", "INT", true),
                col("ts", ltz ? "TIMESTAMP_LTZ(3)" : "TIMESTAMP(3)", false));
    }

    static CaseDef tumbleEdges() {
        CaseDef c = new CaseDef("gen_window_tumble_edges", 250, "window_aggregate");
        List<CaseDef.Col> cols = cols(false);
        windowQuery(c, cols, "TUMBLE(TABLE `input`, DESCRIPTOR(ts), INTERVAL '10' SECOND)", "TUMBLE", 10000, 0, 0,
                aggs(cols, true));
        generate(c, new SplitMix64(c.seed), 1000, 10000, 0, 15000, false, w -> true);
        c.description = "TUMBLE(10 s) on TIMESTAMP(3) with source watermarks placed at window edges: watermarks "
                + "exactly at window_end - 2, window_end - 1 (fires the window), window_end and window_end + 1; rows "
                + "on the first and last millisecond of windows; rows exactly at or 1-2 ms behind the current "
                + "watermark (counted while their window has not fired, dropped once it has); late rows up to 15 s "
                + "behind; jumps of the event time over 2-5 windows so one watermark fires several windows (of "
                + "several keys) at once. COUNT(*), SUM, MIN, MAX, COUNT(DISTINCT).";
        return c;
    }

    static CaseDef hop4x() {
        CaseDef c = new CaseDef("gen_window_hop_size_4x_slide", 251, "window_aggregate");
        List<CaseDef.Col> cols = cols(false);
        windowQuery(c, cols, "HOP(TABLE `input`, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '20' SECOND)", "HOP",
                20000, 5000, 0, aggs(cols, true));
        generate(c, new SplitMix64(c.seed), 900, 5000, 0, 25000, false, w -> true);
        c.description = "HOP(slide 5 s, size 20 s = 4 x slide) on TIMESTAMP(3): every row is in 4 windows; "
                + "watermarks exactly at slide ends - 1 / ends; a row late for its first windows still counts in "
                + "the later ones that have not fired; jumps fire several windows at once. COUNT(*), SUM, MIN, MAX, "
                + "COUNT(DISTINCT).";
        return c;
    }

    static CaseDef cumulateKolkata() {
        CaseDef c = new CaseDef("gen_window_cumulate_ltz_kolkata", 252, "window_aggregate");
        List<CaseDef.Col> cols = cols(true);
        windowQuery(c, cols, "CUMULATE(TABLE `input`, DESCRIPTOR(ts), INTERVAL '1' HOUR, INTERVAL '6' HOUR)",
                "CUMULATE", 6 * 3600000L, 3600000L, 0, aggs(cols, false));
        c.timeZone = "Asia/Kolkata";
        long hour = 3600000L;
        // Flink 2.3.0 loses buffered rows when a watermark falls in [hh:29:59.999, hh:59:59.999) UTC (README)
        LongPredicate allowed = w -> Math.floorMod(w, hour) < 30 * 60000L - 1 || Math.floorMod(w, hour) == hour - 1;
        generate(c, new SplitMix64(c.seed), 700, hour, 30 * 60000L, 2 * hour, true, allowed);
        c.description = "CUMULATE(step 1 h, max size 6 h) on a TIMESTAMP_LTZ(3) rowtime with table.local-time-zone "
                + "= Asia/Kolkata (UTC+05:30): windows start at local 00:00/06:00/12:00/18:00 (18:30/00:30/06:30/"
                + "12:30 UTC) and every step end is a local full hour (hh:30 UTC); window_start/window_end are "
                + "TIMESTAMP(3) local date-times (encoded read as UTC). Rows sit on and around local hour "
                + "boundaries, late rows up to 2 h. No watermark falls in [hh:29:59.999, hh:59:59.999) UTC, where "
                + "Flink 2.3.0 would lose buffered rows (README, 'TIMESTAMP_LTZ window data loss'); watermarks at "
                + "hh:59:59.999 and hh:00 UTC and between. COUNT(*), SUM, MIN, MAX.";
        return c;
    }

    static CaseDef tumbleOffset() {
        CaseDef c = new CaseDef("gen_window_tumble_offset", 253, "window_aggregate");
        List<CaseDef.Col> cols = cols(false);
        windowQuery(c, cols,
                "TUMBLE(TABLE `input`, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '3' SECOND)", "TUMBLE",
                10000, 0, 3000, aggs(cols, false));
        generate(c, new SplitMix64(c.seed), 600, 10000, 3000, 12000, false, w -> true);
        c.description = "TUMBLE(10 s, offset 3 s) on TIMESTAMP(3): windows are [n * 10 s + 3 s, + 10 s); rows and "
                + "watermarks on the shifted edges (end - 1 fires), late rows, jumps over several windows. COUNT(*), "
                + "SUM, MIN, MAX.";
        return c;
    }
}
