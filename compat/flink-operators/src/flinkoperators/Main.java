package flinkoperators;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.types.RowKind;

/**
 * {@code generate --out DIR [--only NAME...]}: run every generated case twice in Flink, check both runs
 * agree under the case's compare mode, write the case directories. {@code verify DIR}: replay existing
 * case directories (input.jsonl) through Flink and check output.jsonl, the plan and the output schema.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("generate") && args[1].equals("--out")) {
            List<String> only = List.of(args).subList(3, args.length).stream().filter(a -> !a.equals("--only")).toList();
            System.exit(generate(Path.of(args[2]), only));
        } else if (args.length == 2 && args[0].equals("verify")) {
            System.exit(verify(Path.of(args[1])));
        }
        System.err.println("usage: generate --out DIR [--only NAME...] | verify DIR");
        System.exit(2);
    }

    static int generate(Path out, List<String> only) throws Exception {
        Files.createDirectories(out);
        int failed = 0;
        for (CaseDef c : Cases.all()) {
            if (!only.isEmpty() && !only.contains(c.name)) {
                continue;
            }
            long t0 = System.nanoTime();
            FlinkRunner.Result a;
            FlinkRunner.Result b;
            try {
                a = FlinkRunner.run(c);
                b = FlinkRunner.run(c);
            } catch (Exception e) {
                StringBuilder why = new StringBuilder();
                for (Throwable t = e; t != null; t = t.getCause()) {
                    why.append("\n    ").append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
                }
                System.err.println(c.name + ": FAILED, Flink threw:" + why);
                failed++;
                continue;
            }
            String d = Compare.diff(c.compare, c.finalKey, a.cells(), b.cells());
            if (d == null && !a.plan().equals(b.plan())) {
                d = "plans differ";
            }
            if (d != null) {
                System.err.println(c.name + ": FAILED, the two Flink runs disagree: " + d);
                failed++;
                continue;
            }
            write(out.resolve(c.name), c, a);
            System.err.printf("%s: %d input rows (%d lines), %d output rows, %.1f s%n", c.name, c.rowCount(),
                    c.events.size(), a.lines().size(), (System.nanoTime() - t0) / 1e9);
        }
        return failed == 0 ? 0 : 1;
    }

    private static void write(Path dir, CaseDef c, FlinkRunner.Result r) throws IOException {
        Files.createDirectories(dir);
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("name", c.name);
        j.put("flink", "2.3.0");
        j.put("description", c.description);
        j.put("seed", c.seed);
        j.put("operator", c.operator);
        j.put("sql", c.sql);
        j.put("plan", r.plan());
        Map<String, Object> inputs = new LinkedHashMap<>();
        for (var e : c.inputs.entrySet()) {
            inputs.put(e.getKey(), cols(e.getValue()));
        }
        j.put("inputs", inputs);
        j.put("spec", c.spec);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("parallelism", 1);
        config.put("mini_batch", c.miniBatch);
        if (c.miniBatch) {
            config.put("mini_batch_size", 5000);
        }
        config.put("local_time_zone", c.timeZone);
        config.put("changelog_mode", c.upsertKey == null ? "all" : "upsert");
        j.put("config", config);
        j.put("output", cols(r.output()));
        j.put("compare", c.compare);
        if (c.compareReason != null) {
            j.put("compare_reason", c.compareReason);
        }
        Files.writeString(dir.resolve("case.json"), Json.pretty(j), StandardCharsets.UTF_8);

        StringBuilder in = new StringBuilder();
        for (CaseDef.Event e : c.events) {
            if (e.isWatermark()) {
                in.append("{\"watermark\":").append(e.watermark()).append("}\n");
                continue;
            }
            List<CaseDef.Col> cs = c.inputs.get(e.input());
            in.append("{\"input\":").append(Json.str(e.input())).append(",\"kind\":\"")
                    .append(e.kind().shortString()).append("\",\"row\":[");
            for (int i = 0; i < cs.size(); i++) {
                if (i > 0) {
                    in.append(',');
                }
                in.append(Json.value(e.row()[i], Types.logical(cs.get(i).type())));
            }
            in.append("]}\n");
        }
        Files.writeString(dir.resolve("input.jsonl"), in.toString(), StandardCharsets.UTF_8);
        StringBuilder o = new StringBuilder();
        for (String l : r.lines()) {
            o.append(l).append('\n');
        }
        Files.writeString(dir.resolve("output.jsonl"), o.toString(), StandardCharsets.UTF_8);
    }

    private static List<Object> cols(List<CaseDef.Col> cols) {
        List<Object> l = new ArrayList<>();
        for (CaseDef.Col c : cols) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", c.name());
            m.put("type", c.type());
            m.put("nullable", c.nullable());
            l.add(m);
        }
        return l;
    }

    // ------------------------------------------------------------------ verify

    static int verify(Path dir) throws Exception {
        ObjectMapper om = new ObjectMapper();
        List<Path> cases;
        try (Stream<Path> s = Files.list(dir)) {
            cases = s.filter(p -> Files.exists(p.resolve("case.json"))).sorted().toList();
        }
        int bad = 0;
        for (Path p : cases) {
            JsonNode j = om.readTree(p.resolve("case.json").toFile());
            CaseDef c = new CaseDef(j.get("name").asText(), j.get("seed").asLong(), j.get("operator").asText());
            c.sql = j.get("sql").asText();
            JsonNode cfg = j.get("config");
            c.miniBatch = cfg.get("mini_batch").asBoolean();
            c.timeZone = cfg.get("local_time_zone").asText();
            c.compare = j.get("compare").asText();
            JsonNode spec = j.get("spec");
            var ins = j.get("inputs").fields();
            while (ins.hasNext()) {
                var e = ins.next();
                List<CaseDef.Col> cols = new ArrayList<>();
                for (JsonNode col : e.getValue()) {
                    cols.add(new CaseDef.Col(col.get("name").asText(), col.get("type").asText(), col.get("nullable").asBoolean()));
                }
                c.inputs.put(e.getKey(), cols);
                if (spec.has("window")) {
                    c.rowtime.put(e.getKey(), cols.get(spec.get("window").get("time_column").asInt()).name());
                }
            }
            List<String> keyNames = new ArrayList<>();
            String keyField = c.operator.equals("group_aggregate") ? "group_by" : c.operator.startsWith("top") ? "partition_by" : null;
            if (keyField != null) {
                List<CaseDef.Col> in0 = c.inputs.values().iterator().next();
                List<Integer> idx = new ArrayList<>();
                for (JsonNode k : spec.get(keyField)) {
                    idx.add(k.asInt());
                    keyNames.add(in0.get(k.asInt()).name());
                }
                if (c.operator.equals("group_aggregate")) {
                    c.finalKey = java.util.stream.IntStream.range(0, idx.size()).toArray();
                } else if (c.operator.equals("top1")) {
                    c.finalKey = idx.stream().mapToInt(Integer::intValue).toArray();
                }
            }
            if (cfg.get("changelog_mode").asText().equals("upsert")) {
                c.upsertKey = keyNames;
            }
            for (String line : Files.readAllLines(p.resolve("input.jsonl"))) {
                JsonNode l = om.readTree(line);
                if (l.has("watermark")) {
                    c.watermark(l.get("watermark").asLong());
                    continue;
                }
                List<CaseDef.Col> cols = c.inputs.get(l.get("input").asText());
                Object[] row = new Object[cols.size()];
                for (int i = 0; i < row.length; i++) {
                    row[i] = decode(l.get("row").get(i), cols.get(i).type());
                }
                c.add(l.get("input").asText(), kind(l.get("kind").asText()), row);
            }
            List<String[]> expected = new ArrayList<>();
            for (String line : Files.readAllLines(p.resolve("output.jsonl"))) {
                JsonNode l = om.readTree(line);
                JsonNode row = l.get("row");
                String[] cs = new String[row.size() + 1];
                cs[0] = l.get("kind").asText();
                for (int i = 0; i < row.size(); i++) {
                    cs[i + 1] = om.writeValueAsString(row.get(i));
                }
                expected.add(cs);
            }
            FlinkRunner.Result r = FlinkRunner.run(c);
            List<String> problems = new ArrayList<>();
            String d = Compare.diff(c.compare, c.finalKey, normalise(om, expected), normalise(om, r.cells()));
            if (d != null) {
                problems.add("output: " + d);
            }
            if (!r.plan().equals(j.get("plan").asText())) {
                problems.add("plan differs:\n" + r.plan());
            }
            if (!om.readTree(Json.pretty(cols(r.output()))).equals(j.get("output"))) {
                problems.add("output schema differs: " + Json.pretty(cols(r.output())));
            }
            if (!c.compare.equals("changelog") && !c.miniBatch && r.cells().size() != expected.size()) {
                problems.add("changelog length " + r.cells().size() + " vs " + expected.size());
            }
            if (problems.isEmpty()) {
                System.out.println(c.name + ": ok (" + r.cells().size() + " rows, " + c.compare + ")");
            } else {
                bad++;
                System.out.println(c.name + ": DIFFERS: " + String.join("; ", problems));
            }
        }
        System.out.println(cases.size() - bad + "/" + cases.size() + " cases reproduced");
        return bad == 0 ? 0 : 1;
    }

    /** Re-encodes cells through Jackson so number spellings compare by value ("1.0" vs "1.0"). */
    private static List<String[]> normalise(ObjectMapper om, List<String[]> rows) throws IOException {
        List<String[]> out = new ArrayList<>();
        for (String[] r : rows) {
            String[] n = r.clone();
            for (int i = 1; i < n.length; i++) {
                n[i] = om.writeValueAsString(om.readTree(n[i]));
            }
            out.add(n);
        }
        return out;
    }

    static RowKind kind(String s) {
        for (RowKind k : RowKind.values()) {
            if (k.shortString().equals(s)) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown RowKind " + s);
    }

    static Object decode(JsonNode v, String type) {
        if (v.isNull()) {
            return null;
        }
        String t = type.replaceAll("\\(.*", "");
        switch (t) {
            case "BOOLEAN": return v.asBoolean();
            case "TINYINT": return (byte) v.asInt();
            case "SMALLINT": return (short) v.asInt();
            case "INT": return v.asInt();
            case "BIGINT": return Long.parseLong(v.asText());
            case "FLOAT": return v.isTextual() ? Float.parseFloat(v.asText()) : (float) v.asDouble();
            case "DOUBLE": return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
            case "DECIMAL": return new BigDecimal(v.asText());
            case "STRING": case "VARCHAR": case "CHAR": return v.asText();
            case "DATE": return java.time.LocalDate.ofEpochDay(v.asLong());
            case "TIMESTAMP": case "TIMESTAMP_LTZ": {
                String s = v.asText();
                long ms = Long.parseLong(s.contains(".") ? s.substring(0, s.indexOf('.')) : s);
                int nanos = s.contains(".") ? Integer.parseInt(s.substring(s.indexOf('.') + 1)) : 0;
                Instant i = Instant.ofEpochMilli(ms).plusNanos(nanos);
                return t.equals("TIMESTAMP") ? LocalDateTime.ofInstant(i, ZoneOffset.UTC) : i;
            }
            default: throw new IllegalArgumentException("unsupported type " + type);
        }
    }
}
