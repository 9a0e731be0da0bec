package flinkoperators;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.legacy.SourceFunction;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.ExplainFormat;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.internal.AbstractStreamTableEnvironmentImpl;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ContextResolvedTable;
import org.apache.flink.table.catalog.DataTypeFactory;
import org.apache.flink.table.catalog.ExternalCatalogTable;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.SchemaTranslator;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.operations.ExternalModifyOperation;
import org.apache.flink.table.operations.QueryOperation;
import org.apache.flink.table.runtime.typeutils.ExternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

/** Runs one case in a local Flink 2.3.0 exactly as the fixtures' README describes. */
final class FlinkRunner {
    private FlinkRunner() {}

    /** What one run produced. */
    record Result(String plan, List<CaseDef.Col> output, List<String> lines, List<String[]> cells) {}

    private static int jobCounter;

    static Result run(CaseDef c) throws Exception {
        String jobName = "case-" + c.name + "-" + (++jobCounter);
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", "hashmap");
        conf.setString("metrics.reporter.pace.factory.class", PaceReporter.Factory.class.getName());
        // robustness on a starved machine only (no effect on results): long RPC and heartbeat timeouts
        conf.setString("pekko.ask.timeout", "600 s");
        conf.setString("heartbeat.timeout", "600000");
        conf.setString("heartbeat.rpc-failure-threshold", "100");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        env.setBufferTimeout(0);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.async-state.enabled", "false");
        tEnv.getConfig().set("table.local-time-zone", c.timeZone);
        if (c.miniBatch) {
            tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
            tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
            tEnv.getConfig().set("table.exec.mini-batch.size", "5000");
        }
        DataTypeFactory dtf = ((TableEnvironmentImpl) tEnv).getCatalogManager().getDataTypeFactory();

        List<CaseDef.Event> events = c.events;
        Method fromStream = AbstractStreamTableEnvironmentImpl.class.getDeclaredMethod(
                "fromStreamInternal", DataStream.class, Schema.class, String.class, ChangelogMode.class);
        fromStream.setAccessible(true);
        boolean paced = c.inputs.size() > 1;
        DataStream<Integer> source =
                env.addSource(new ReplaySource(events, paced ? jobName : null), "replay", Types.INT);
        for (Map.Entry<String, List<CaseDef.Col>> in : c.inputs.entrySet()) {
            List<DataTypes.Field> fields = new ArrayList<>();
            for (CaseDef.Col col : in.getValue()) {
                fields.add(DataTypes.FIELD(col.name(), dtf.createDataType(col.type() + (col.nullable() ? "" : " NOT NULL"))));
            }
            DataType rowType = DataTypes.ROW(fields.toArray(new DataTypes.Field[0])).notNull();
            DataStream<Row> rows = source.flatMap(new Pick(in.getKey(), events), ExternalTypeInfo.of(rowType))
                    .name("pick-" + in.getKey());
            String rt = c.rowtime.get(in.getKey());
            Schema schema = rt == null
                    ? Schema.derived()
                    : Schema.newBuilder().watermark(rt, "SOURCE_WATERMARK()").build();
            ChangelogMode mode = c.insertOnly(in.getKey()) ? ChangelogMode.insertOnly() : ChangelogMode.all();
            // createTemporaryView(path, stream, schema) with a changelog mode: the scan is named after the input
            Table t = (Table) fromStream.invoke(tEnv, rows, schema, "`" + in.getKey() + "`", mode);
            tEnv.createTemporaryView("`" + in.getKey() + "`", t);
        }

        Table table = tEnv.sqlQuery(c.sql);
        ResolvedSchema rs = table.getResolvedSchema();
        Schema target = null;
        ChangelogMode sinkMode = null;
        if (c.upsertKey != null) {
            target = Schema.newBuilder().fromResolvedSchema(rs).primaryKey(c.upsertKey).build();
            sinkMode = ChangelogMode.upsert();
        }
        // The same ModifyOperation toChangelogStream builds, so that explain shows exactly what runs.
        AbstractStreamTableEnvironmentImpl impl = (AbstractStreamTableEnvironmentImpl) tEnv;
        SchemaTranslator.ProducingResult pr = SchemaTranslator.createProducingResult(rs, target);
        QueryOperation query = pr.getProjections()
                .map(p -> impl.getOperationTreeBuilder().project(
                        p.stream().map(org.apache.flink.table.api.Expressions::$)
                                .map(e -> (org.apache.flink.table.expressions.Expression) e).toList(),
                        table.getQueryOperation()))
                .orElseGet(table::getQueryOperation);
        ResolvedCatalogTable sinkTable = impl.getCatalogManager().resolveCatalogTable(new ExternalCatalogTable(pr.getSchema()));
        ExternalModifyOperation op = new ExternalModifyOperation(
                ContextResolvedTable.anonymous("datastream_sink", sinkTable),
                query,
                sinkMode,
                pr.getPhysicalDataType().orElseGet(() -> sinkTable.getResolvedSchema().toPhysicalRowDataType()));
        String explain = impl.explainInternal(List.of(op), ExplainFormat.TEXT, ExplainDetail.CHANGELOG_MODE);
        // the anonymous sink's counter ($n) depends on how many ran before in this JVM
        String plan = section(explain, "== Optimized Physical Plan ==").replaceAll("(\\*anonymous_[a-z_]+)\\$\\d+\\*", "$1*");

        Method toStream = AbstractStreamTableEnvironmentImpl.class.getDeclaredMethod(
                "toStreamInternal", Table.class, org.apache.flink.table.operations.ModifyOperation.class);
        toStream.setAccessible(true);
        @SuppressWarnings("unchecked")
        DataStream<Row> out = (DataStream<Row>) toStream.invoke(impl, table, op);

        List<CaseDef.Col> outCols = new ArrayList<>();
        List<LogicalType> outTypes = new ArrayList<>();
        for (Column col : sinkTable.getResolvedSchema().getColumns()) {
            LogicalType t = col.getDataType().getLogicalType();
            outCols.add(new CaseDef.Col(col.getName(), typeString(t), t.isNullable()));
            outTypes.add(t);
        }
        List<String> lines = new ArrayList<>();
        List<String[]> cells = new ArrayList<>();
        try (CloseableIterator<Row> it = out.executeAndCollect(jobName)) {
            while (it.hasNext()) {
                Row r = it.next();
                String[] cs = new String[r.getArity() + 1];
                cs[0] = r.getKind().shortString();
                for (int i = 0; i < r.getArity(); i++) {
                    cs[i + 1] = Json.value(r.getField(i), outTypes.get(i));
                }
                cells.add(cs);
                lines.add("{\"kind\":\"" + cs[0] + "\",\"row\":[" + String.join(",", List.of(cs).subList(1, cs.length)) + "]}");
            }
        }
        PaceReporter.JOIN_IN.remove(jobName);
        return new Result(plan, outCols, lines, cells);
    }

    /** A Flink SQL type string without NOT NULL and without time-attribute markers. */
    static String typeString(LogicalType t) {
        String s = t.copy(true).asSummaryString();
        return s.replaceAll(" \\*[A-Z_]+\\*", "");
    }

    private static String section(String explain, String header) {
        int at = explain.indexOf(header);
        if (at < 0) {
            throw new IllegalStateException("no " + header + " in explain output:\n" + explain);
        }
        String rest = explain.substring(at + header.length()).replaceFirst("^\\r?\\n", "");
        int end = rest.indexOf("\n\n");
        return (end < 0 ? rest : rest.substring(0, end)).strip();
    }

    /** Emits the event indexes in order; watermarks exactly at their positions; optionally paced. */
    static final class ReplaySource implements SourceFunction<Integer> {
        private final List<CaseDef.Event> events;
        private final String pacedJob;
        private volatile boolean running = true;

        ReplaySource(List<CaseDef.Event> events, String pacedJob) {
            this.events = new ArrayList<>(events);
            this.pacedJob = pacedJob;
        }

        @Override
        public void run(SourceContext<Integer> ctx) throws Exception {
            long emitted = 0;
            for (int i = 0; i < events.size() && running; i++) {
                CaseDef.Event e = events.get(i);
                if (e.isWatermark()) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.emitWatermark(new Watermark(e.watermark()));
                    }
                    continue;
                }
                if (pacedJob != null && emitted > 0) {
                    awaitJoinInput(emitted);
                }
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(i);
                }
                emitted++;
            }
        }

        private void awaitJoinInput(long n) throws InterruptedException {
            long deadline = System.nanoTime() + 600_000_000_000L;
            while (running) {
                Counter c = PaceReporter.JOIN_IN.get(pacedJob);
                if (c != null && c.getCount() >= n) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("join did not take record " + (n - 1) + " within 600 s");
                }
                Thread.sleep(0, 200_000);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** Turns the event indexes of one input into its rows. */
    static final class Pick implements org.apache.flink.api.common.functions.FlatMapFunction<Integer, Row> {
        private final String input;
        private final List<CaseDef.Event> events;

        Pick(String input, List<CaseDef.Event> events) {
            this.input = input;
            this.events = new ArrayList<>(events);
        }

        @Override
        public void flatMap(Integer i, Collector<Row> out) {
            CaseDef.Event e = events.get(i);
            if (input.equals(e.input())) {
                out.collect(Row.ofKind(e.kind(), e.row().clone()));
            }
        }
    }
}
