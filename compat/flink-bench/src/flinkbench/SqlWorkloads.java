package flinkbench;

import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

/**
 * W2-W4 as Flink SQL. The generator is a table: {@code fromSequence(0, n - 1)} at parallelism
 * 1 (every key's events in generator order), mapped to rows {@code (i, k, v)} of BIGINT NOT
 * NULL by the same splitmix64 functions, registered as the insert-only view {@code events}
 * ({@code fromDataStream}). The query's changelog goes through {@code toChangelogStream} (W2
 * and W4 in upsert mode on their key, so {@code +I} then {@code +U} as the changelog;
 * W3 insert-only) into a checksum map and a discarding sink.
 *
 * <ul>
 *   <li>W2: {@code SELECT k, COUNT(*), SUM(v), MAX(v) FROM events GROUP BY k} with
 *       {@code table.exec.mini-batch.enabled} (size 5000, allow-latency 1 h so that bundles
 *       close by count; the planner's AUTO strategy makes it local-global);
 *   <li>W3: N / 10 events; {@code SELECT l.jk, l.i, l.v, r.i, r.v FROM (even i) l JOIN (odd
 *       i) r ON l.jk = r.jk} with {@code jk = k % (K / 10)};
 *   <li>W4: {@code SELECT i, k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER
 *       BY v DESC) AS rn FROM events) WHERE rn = 1} (append Top-1, ties keep the earlier
 *       row).
 * </ul>
 */
final class SqlWorkloads {
    private SqlWorkloads() {}

    /** Event i as the row (i, k, v), or (i, k % joinKeys, v) for W3. */
    static final class ToRow implements MapFunction<Long, Row> {
        final long keys;
        final long joinKeys;

        ToRow(long keys, long joinKeys) {
            this.keys = keys;
            this.joinKeys = joinKeys;
        }

        @Override
        public Row map(Long i) {
            long k = FlinkBench.key(i, keys);
            if (joinKeys > 0) {
                k = k % joinKeys;
            }
            return Row.of(i, k, FlinkBench.value(i));
        }
    }

    /**
     * The checksum sink of a changelog: chk_changelog (+ for +I/+U, - for -U/-D) and rows per
     * kind in accumulators; with {@code finalTable} (the untimed run) also the final table as
     * the last +I/+U row hash per key column {@code keyColumn} (-D removes the key), or, when
     * {@code keyColumn} is negative (an insert-only join), the changelog itself.
     */
    static final class Checksum extends RichMapFunction<Row, Long> {
        final boolean finalTable;
        final int keyColumn;
        transient LongCounter changelog;
        transient LongCounter[] kinds;
        transient LongCounter finalSum;
        transient LongCounter finalRows;
        transient Map<Long, Long> last;
        transient long[] columns;

        Checksum(boolean finalTable, int keyColumn) {
            this.finalTable = finalTable;
            this.keyColumn = keyColumn;
        }

        @Override
        public void open(OpenContext ctx) {
            changelog = new LongCounter();
            finalSum = new LongCounter();
            finalRows = new LongCounter();
            kinds = new LongCounter[4];
            String[] names = {"rows_insert", "rows_update_before", "rows_update_after", "rows_delete"};
            for (int k = 0; k < 4; k++) {
                kinds[k] = new LongCounter();
                getRuntimeContext().addAccumulator(names[k], kinds[k]);
            }
            getRuntimeContext().addAccumulator("chk_changelog", changelog);
            getRuntimeContext().addAccumulator("chk_final", finalSum);
            getRuntimeContext().addAccumulator("final_rows", finalRows);
            last = finalTable && keyColumn >= 0 ? new HashMap<>() : null;
        }

        @Override
        public Long map(Row row) {
            int arity = row.getArity();
            if (columns == null || columns.length != arity) {
                columns = new long[arity];
            }
            for (int c = 0; c < arity; c++) {
                columns[c] = (Long) row.getField(c);
            }
            long h = FlinkBench.rowhash(columns);
            RowKind kind = row.getKind();
            kinds[kind.toByteValue()].add(1L);
            boolean accumulate = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER;
            changelog.add(accumulate ? h : -h); // Java long arithmetic wraps
            if (last != null) {
                long key = columns[keyColumn];
                if (accumulate) {
                    last.put(key, h);
                } else if (kind == RowKind.DELETE) {
                    last.remove(key);
                }
            } else if (finalTable) {
                finalSum.add(accumulate ? h : -h);
                finalRows.add(accumulate ? 1L : -1L);
            }
            return h;
        }

        @Override
        public void close() {
            if (last != null) {
                long sum = 0;
                for (long h : last.values()) {
                    sum += h;
                }
                finalSum.add(sum);
                finalRows.add((long) last.size());
            }
        }
    }

    static JobExecutionResult execute(String workload, String backend, int parallelism,
            long events, long keys, boolean withFinal) throws Exception {
        StreamExecutionEnvironment env = FlinkBench.environment(backend, parallelism);
        StreamTableEnvironment tEnv =
                StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.async-state.enabled", "false");
        boolean join = workload.equals("w3");
        long n = join ? events / 10 : events;
        long joinKeys = join ? Math.max(1, keys / 10) : 0;
        if (workload.equals("w2")) {
            tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
            tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 h");
            tEnv.getConfig().set("table.exec.mini-batch.size", "5000");
        }
        TypeInformation<Row> rowType = Types.ROW_NAMED(
                new String[] {"i", "k", "v"}, Types.LONG, Types.LONG, Types.LONG);
        DataStream<Row> rows = env.fromSequence(0, n - 1)
                .setParallelism(1)
                .name("events")
                .map(new ToRow(keys, joinKeys))
                .returns(rowType)
                .setParallelism(1)
                .name("rows");
        Schema source = Schema.newBuilder()
                .column("i", "BIGINT NOT NULL")
                .column("k", "BIGINT NOT NULL")
                .column("v", "BIGINT NOT NULL")
                .build();
        tEnv.createTemporaryView("events", tEnv.fromDataStream(rows, source));
        String sql;
        String upsertKey;
        int keyColumn;
        switch (workload) {
            case "w2" -> {
                sql = "SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM events GROUP BY k";
                upsertKey = "k";
                keyColumn = 0;
            }
            case "w3" -> {
                sql = "SELECT l.k AS jk, l.i AS li, l.v AS lv, r.i AS ri, r.v AS rv FROM "
                        + "(SELECT * FROM events WHERE MOD(i, 2) = 0) l JOIN "
                        + "(SELECT * FROM events WHERE MOD(i, 2) = 1) r ON l.k = r.k";
                upsertKey = null;
                keyColumn = -1;
            }
            case "w4" -> {
                sql = "SELECT i, k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
                        + "ORDER BY v DESC) AS rn FROM events) WHERE rn = 1";
                upsertKey = "k";
                keyColumn = 1;
            }
            default -> throw new IllegalArgumentException("no SQL workload " + workload);
        }
        Table table = tEnv.sqlQuery(sql);
        DataStream<Row> out = upsertKey == null
                ? tEnv.toChangelogStream(table)
                : tEnv.toChangelogStream(table,
                        Schema.newBuilder().fromResolvedSchema(table.getResolvedSchema())
                                .primaryKey(upsertKey).build(),
                        ChangelogMode.upsert());
        out.map(new Checksum(withFinal, keyColumn))
                .name("checksum")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
        return env.execute("sfstate-bench " + workload + " " + backend + " p" + parallelism);
    }
}
