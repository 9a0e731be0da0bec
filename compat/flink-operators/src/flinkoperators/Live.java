package flinkoperators;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;

import org.apache.flink.types.RowKind;

/** The live rows of one generated retracting input, so every retraction (unless asked) matches one. */
final class Live {
    final CaseDef c;
    final String input;
    final List<Object[]> rows = new ArrayList<>();
    final SplitMix64 rnd;

    Live(CaseDef c, String input, SplitMix64 rnd) {
        this.c = c;
        this.input = input;
        this.rnd = rnd;
    }

    void insert(Object[] row) {
        c.add(input, RowKind.INSERT, row);
        rows.add(row);
    }

    boolean isEmpty() {
        return rows.isEmpty();
    }

    int randomIndex() {
        return rnd.below(rows.size());
    }

    /** -D of the live row at idx. */
    void delete(int idx) {
        c.add(input, RowKind.DELETE, rows.remove(idx));
    }

    /** -U of the live row at idx, then +U of replacement. */
    void update(int idx, Object[] replacement) {
        c.add(input, RowKind.UPDATE_BEFORE, rows.remove(idx));
        c.add(input, RowKind.UPDATE_AFTER, replacement);
        rows.add(replacement);
    }

    /** -D of every live row matching p (in insertion order). */
    int drain(Predicate<Object[]> p) {
        int n = 0;
        for (int i = 0; i < rows.size(); ) {
            if (p.test(rows.get(i))) {
                delete(i);
                n++;
            } else {
                i++;
            }
        }
        return n;
    }

    /** Deletes rows in random order until none is left. */
    void drainAll() {
        while (!rows.isEmpty()) {
            delete(randomIndex());
        }
    }

    /** A retraction of a row that is not live (kind -D or -U; a -U is followed by no +U). */
    void retractUnknown(Object[] row, RowKind kind) {
        for (Object[] r : rows) {
            if (Arrays.equals(r, row)) {
                throw new IllegalStateException("row is live");
            }
        }
        c.add(input, kind, row);
    }

    Object[] copy(int idx) {
        return rows.get(idx).clone();
    }
}
