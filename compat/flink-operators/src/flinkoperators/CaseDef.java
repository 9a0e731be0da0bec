package flinkoperators;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.types.RowKind;

/** One operator case before Flink ran it: the query, the input schema and changelog, and the metadata. */
final class CaseDef {
    /** A column of an input or of the output. */
    record Col(String name, String type, boolean nullable) {}

    /** One input.jsonl line: a row of an input, or (input == null) a watermark. */
    record Event(String input, RowKind kind, Object[] row, long watermark) implements Serializable {
        boolean isWatermark() {
            return input == null;
        }
    }

    String name;
    String description;
    long seed;
    String operator;
    String sql;
    final Map<String, List<Col>> inputs = new LinkedHashMap<>();
    /** The input's event-time column (declared WATERMARK ... AS SOURCE_WATERMARK()), if any. */
    final Map<String, String> rowtime = new LinkedHashMap<>();
    Object spec;
    boolean miniBatch;
    String timeZone = "UTC";
    /** Upsert mode: the primary-key columns of the sink (null = changelog mode "all"). */
    List<String> upsertKey;
    String compare = "changelog";
    String compareReason;
    /** Output columns forming the unique key for "final" materialisation; null = multiset. */
    int[] finalKey;
    final List<Event> events = new ArrayList<>();

    CaseDef(String name, long seed, String operator) {
        this.name = name;
        this.seed = seed;
        this.operator = operator;
    }

    CaseDef input(String input, Col... cols) {
        inputs.put(input, List.of(cols));
        return this;
    }

    static Col col(String name, String type, boolean nullable) {
        return new Col(name, type, nullable);
    }

    void add(String input, RowKind kind, Object... row) {
        events.add(new Event(input, kind, row, 0));
    }

    void watermark(long ts) {
        events.add(new Event(null, null, null, ts));
    }

    boolean insertOnly(String input) {
        for (Event e : events) {
            if (!e.isWatermark() && e.input().equals(input) && e.kind() != RowKind.INSERT) {
                return false;
            }
        }
        return true;
    }

    int rowCount() {
        int n = 0;
        for (Event e : events) {
            if (!e.isWatermark()) {
                n++;
            }
        }
        return n;
    }

    /** Marks the case "final" with the given reason. */
    CaseDef fin(String reason) {
        this.compare = "final";
        this.compareReason = reason;
        return this;
    }
}
