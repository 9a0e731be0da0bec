package flinkoperators;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Builders for the operator specs and the SQL text of aggregate calls. */
final class Spec {
    private Spec() {}

    /** One aggregate call: spec function name, argument column (index, name), DISTINCT, output alias. */
    record Agg(String function, int arg, String argName, boolean distinct, String alias) {
        String sql() {
            if (function.equals("COUNT_STAR")) {
                return "COUNT(*) AS " + alias;
            }
            return function + "(" + (distinct ? "DISTINCT " : "") + argName + ") AS " + alias;
        }

        Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("function", function);
            m.put("args", function.equals("COUNT_STAR") ? List.of() : List.of(arg));
            m.put("distinct", distinct);
            return m;
        }
    }

    static Agg countStar(String alias) {
        return new Agg("COUNT_STAR", -1, null, false, alias);
    }

    static Agg agg(String fn, List<CaseDef.Col> cols, String col, boolean distinct, String alias) {
        int idx = -1;
        for (int i = 0; i < cols.size(); i++) {
            if (cols.get(i).name().equals(col)) {
                idx = i;
            }
        }
        if (idx < 0) {
            throw new IllegalArgumentException("no column " + col);
        }
        return new Agg(fn, idx, col, distinct, alias);
    }

    static List<Object> aggJson(List<Agg> aggs) {
        List<Object> l = new ArrayList<>();
        for (Agg a : aggs) {
            l.add(a.json());
        }
        return l;
    }

    static String selectList(List<Agg> aggs) {
        List<String> s = new ArrayList<>();
        for (Agg a : aggs) {
            s.add(a.sql());
        }
        return String.join(", ", s);
    }

    static Map<String, Object> groupAgg(List<Integer> groupBy, List<Agg> aggs, boolean insertOnly) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("group_by", groupBy);
        m.put("aggregates", aggJson(aggs));
        m.put("input_insert_only", insertOnly);
        return m;
    }

    static Map<String, Object> order(int column, boolean descending, boolean nullsLast) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("column", column);
        m.put("descending", descending);
        m.put("nulls_last", nullsLast);
        return m;
    }

    static Map<String, Object> rank(List<Integer> partitionBy, List<Object> orderBy, int limit, String function,
            boolean rankNumber) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("partition_by", partitionBy);
        m.put("order_by", orderBy);
        m.put("rank_limit", limit);
        if (function != null) {
            m.put("rank_function", function);
        }
        m.put("output_rank_number", rankNumber);
        return m;
    }

    static Map<String, Object> join(List<Integer> left, List<Integer> right, String nonEqui) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("join_type", "INNER");
        m.put("left_keys", left);
        m.put("right_keys", right);
        m.put("non_equi_condition", nonEqui);
        return m;
    }

    static Map<String, Object> window(String kind, int timeColumn, long sizeMs, long slideOrStepMs, long offsetMs,
            List<Integer> groupBy, List<Agg> aggs) {
        Map<String, Object> w = new LinkedHashMap<>();
        w.put("kind", kind);
        w.put("time_column", timeColumn);
        w.put("size_ms", sizeMs);
        if (kind.equals("HOP")) {
            w.put("slide_ms", slideOrStepMs);
        } else if (kind.equals("CUMULATE")) {
            w.put("step_ms", slideOrStepMs);
        }
        w.put("offset_ms", offsetMs);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("window", w);
        m.put("group_by", groupBy);
        m.put("aggregates", aggJson(aggs));
        return m;
    }
}
