package flinkoperators;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The README's compare modes over output rows given as [kind, encoded cell...]. */
final class Compare {
    private Compare() {}

    /** Materialises a changelog: keyed by the key cells (last +I/+U wins, -D removes), or a multiset. */
    static Map<String, Integer> materialise(List<String[]> rows, int[] key) {
        Map<String, Integer> out = new TreeMap<>();
        if (key != null) {
            Map<String, String> byKey = new LinkedHashMap<>();
            for (String[] r : rows) {
                StringBuilder k = new StringBuilder();
                for (int i : key) {
                    k.append(r[i + 1]).append('\u0001');
                }
                switch (r[0]) {
                    case "+I", "+U" -> byKey.put(k.toString(), row(r));
                    case "-D" -> byKey.remove(k.toString());
                    default -> { }
                }
            }
            for (String v : byKey.values()) {
                out.merge(v, 1, Integer::sum);
            }
            return out;
        }
        for (String[] r : rows) {
            int d = r[0].equals("+I") || r[0].equals("+U") ? 1 : -1;
            out.merge(row(r), d, Integer::sum);
        }
        out.values().removeIf(n -> n == 0);
        return out;
    }

    private static String row(String[] r) {
        return String.join(",", Arrays.asList(r).subList(1, r.length));
    }

    /** Null when equal under the mode, else a description of the first difference. */
    static String diff(String mode, int[] key, List<String[]> a, List<String[]> b) {
        if (mode.equals("changelog")) {
            int n = Math.min(a.size(), b.size());
            for (int i = 0; i < n; i++) {
                if (!Arrays.equals(a.get(i), b.get(i))) {
                    return "row " + i + ": " + Arrays.toString(a.get(i)) + " vs " + Arrays.toString(b.get(i));
                }
            }
            return a.size() == b.size() ? null : "row counts " + a.size() + " vs " + b.size();
        }
        Map<String, Integer> ma = materialise(a, key);
        Map<String, Integer> mb = materialise(b, key);
        if (ma.equals(mb)) {
            return null;
        }
        List<String> only = new ArrayList<>();
        for (var e : ma.entrySet()) {
            if (!e.getValue().equals(mb.get(e.getKey()))) {
                only.add(e.getKey() + " x" + e.getValue() + " vs x" + mb.get(e.getKey()));
            }
        }
        for (var e : mb.entrySet()) {
            if (!ma.containsKey(e.getKey())) {
                only.add(e.getKey() + " x0 vs x" + e.getValue());
            }
        }
        return "final tables differ (" + only.size() + " rows), first: " + only.get(0);
    }
}
