package flinkoracle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The project's Flink 2.3.0 oracle: writes the six golden-vector files of
 * testdata/flink-vectors (generate) or replays an existing set against Flink (verify).
 *
 * <pre>
 *   FlinkOracle generate --out DIR [--profile NAME] [--seed HEX] [--extended]
 *   FlinkOracle verify DIR
 * </pre>
 *
 * Every output value comes from a Flink (or JDK, for CRC32C and hashCode) method; this program
 * only picks inputs.
 */
public final class FlinkOracle {
    private FlinkOracle() {}

    static final String[] FILES = {
        SimpleFiles.MURMUR, KeyGroupFile.NAME, BinaryRowsFile.NAME, RocksDbKeysFile.NAME,
        SimpleFiles.CRC, SimpleFiles.MEMORY,
    };

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage();
        }
        switch (args[0]) {
            case "generate":
                System.exit(generate(args));
                break;
            case "verify":
                if (args.length != 2) {
                    usage();
                }
                System.exit(verify(Paths.get(args[1])));
                break;
            default:
                usage();
        }
    }

    private static void usage() {
        System.err.println(
                "usage: FlinkOracle generate --out DIR [--profile NAME] [--seed HEX] [--extended]\n"
                        + "       FlinkOracle verify DIR");
        System.exit(2);
    }

    static long parseSeed(String s) {
        String t = s.startsWith("0x") || s.startsWith("0X") ? s.substring(2) : s;
        return Long.parseUnsignedLong(t, 16);
    }

    // ------------------------------------------------------------------ generate

    private static int generate(String[] args) throws IOException {
        String profile = "oracle";
        long seed = parseSeed("6f7261636c652d31"); // "oracle-1"
        boolean extended = false;
        Path out = null;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--profile":
                    profile = args[++i];
                    break;
                case "--seed":
                    seed = parseSeed(args[++i]);
                    break;
                case "--out":
                    out = Paths.get(args[++i]);
                    break;
                case "--extended":
                    extended = true;
                    break;
                default:
                    usage();
            }
        }
        if (out == null || profile.isEmpty()) {
            usage();
        }
        Ctx ctx = new Ctx(profile, seed, extended);
        Files.createDirectories(out);
        System.err.printf(
                "generating profile %s, seed 0x%016x%s into %s%n",
                profile, seed, extended ? ", extended" : "", out);

        write(out, SimpleFiles.MURMUR, SimpleFiles.murmur(ctx));
        write(out, KeyGroupFile.NAME, KeyGroupFile.generate(ctx));
        List<BinaryRowsFile.Case> cases = new ArrayList<>();
        write(out, BinaryRowsFile.NAME, BinaryRowsFile.generate(ctx, cases));
        write(out, RocksDbKeysFile.NAME, RocksDbKeysFile.generate(ctx, cases));
        write(out, SimpleFiles.CRC, SimpleFiles.crc(ctx));
        write(out, SimpleFiles.MEMORY, SimpleFiles.memory(ctx));
        return 0;
    }

    private static void write(Path dir, String name, List<String> lines) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        Files.write(dir.resolve(name), sb.toString().getBytes(StandardCharsets.UTF_8));
        System.err.printf("  %s: %d lines%n", name, lines.size());
    }

    // ------------------------------------------------------------------ verify

    interface Replayer {
        String replay(Map<String, Object> line) throws Exception;
    }

    static Replayer replayer(String file) {
        switch (file) {
            case SimpleFiles.MURMUR:
                return SimpleFiles::murmurReplay;
            case KeyGroupFile.NAME:
                return KeyGroupFile::replay;
            case BinaryRowsFile.NAME:
                return BinaryRowsFile::replay;
            case RocksDbKeysFile.NAME:
                return RocksDbKeysFile::replay;
            case SimpleFiles.CRC:
                return SimpleFiles::crcReplay;
            case SimpleFiles.MEMORY:
                return SimpleFiles::memoryReplay;
            default:
                throw new IllegalArgumentException(file);
        }
    }

    /**
     * Recomputes every line of every file from its input fields and compares the whole line
     * (byte for byte, so key order and JSON form are checked too).
     */
    static int verify(Path dir) throws IOException {
        int bad = 0;
        for (String file : FILES) {
            Path p = dir.resolve(file);
            if (!Files.exists(p)) {
                System.out.printf("%s: missing%n", file);
                bad++;
                continue;
            }
            byte[] raw = Files.readAllBytes(p);
            String text = new String(raw, StandardCharsets.UTF_8);
            if (!text.isEmpty() && !text.endsWith("\n")) {
                System.out.printf("%s: last line has no \\n%n", file);
                bad++;
            }
            Replayer rep = replayer(file);
            int n = 0;
            int mismatches = 0;
            Map<String, Integer> fieldCounts = new LinkedHashMap<>();
            List<String> examples = new ArrayList<>();
            for (String line : text.split("\n", -1)) {
                if (line.isEmpty()) {
                    continue;
                }
                n++;
                String again;
                try {
                    again = rep.replay(Json.parseObject(line));
                } catch (Exception e) {
                    mismatches++;
                    fieldCounts.merge("<exception " + e + ">", 1, Integer::sum);
                    if (examples.size() < 5) {
                        examples.add("line " + n + ": replay failed: " + e);
                    }
                    continue;
                }
                if (!again.equals(line)) {
                    mismatches++;
                    Set<String> diff = differingFields(line, again);
                    for (String f : diff) {
                        fieldCounts.merge(f, 1, Integer::sum);
                    }
                    if (examples.size() < 5) {
                        examples.add(
                                "line " + n + " fields " + diff + "\n      file:   " + line
                                        + "\n      flink:  " + again);
                    }
                }
            }
            System.out.printf("%s: %d lines verified, %d mismatches%n", file, n, mismatches);
            if (mismatches > 0) {
                System.out.printf("    mismatching fields (lines): %s%n", fieldCounts);
                for (String e : examples) {
                    System.out.println("    " + e);
                }
                bad++;
            }
        }
        return bad == 0 ? 0 : 1;
    }

    private static Set<String> differingFields(String a, String b) {
        Set<String> out = new LinkedHashSet<>();
        Map<String, Object> ma = Json.parseObject(a);
        Map<String, Object> mb = Json.parseObject(b);
        if (!new ArrayList<>(ma.keySet()).equals(new ArrayList<>(mb.keySet()))) {
            out.add("<key order/set>");
        }
        Set<String> keys = new LinkedHashSet<>(ma.keySet());
        keys.addAll(mb.keySet());
        for (String k : keys) {
            String va = Json.write(ma.get(k));
            String vb = Json.write(mb.get(k));
            if (!va.equals(vb)) {
                out.add(k);
            }
        }
        if (out.isEmpty()) {
            out.add("<formatting>");
        }
        return out;
    }
}
