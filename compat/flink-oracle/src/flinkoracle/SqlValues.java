package flinkoracle;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * SQL field values: the README's JSON form on one side, the Flink internal objects handed to
 * Flink ({@code Integer}, {@code StringData}, {@code DecimalData}, {@code TimestampData}, ...) on
 * the other, and the random pickers of inputs.
 *
 * <p>JSON is always derived from the internal object through Flink/JDK accessors ({@code
 * DecimalData.toBigDecimal().toPlainString()}, {@code TimestampData.toString()}, {@code
 * Float.floatToRawIntBits}, ...), so a replayed line is re-derived the same way.
 */
public final class SqlValues {
    private SqlValues() {}

    private static final Map<String, LogicalType> TYPE_CACHE = new HashMap<>();

    /** {@code LogicalTypeParser.parse(text)} (nullable), cached. */
    public static LogicalType parseType(String text) {
        return TYPE_CACHE.computeIfAbsent(
                text, t -> LogicalTypeParser.parse(t, SqlValues.class.getClassLoader()));
    }

    public static LogicalType[] parseTypes(List<String> texts) {
        LogicalType[] out = new LogicalType[texts.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = parseType(texts.get(i));
        }
        return out;
    }

    /** Canonical type text for generation; checked to round-trip through Flink's parser. */
    public static String canonical(String text) {
        String summary = parseType(text).asSummaryString();
        if (!summary.equals(text)) {
            throw new IllegalStateException(
                    "type text " + text + " is printed by Flink as " + summary);
        }
        return text;
    }

    // ------------------------------------------------------------ JSON <-> internal

    /** JSON form (README table) to the Flink internal object. */
    @SuppressWarnings("unchecked")
    public static Object toInternal(LogicalType t, Object json) {
        if (json == null) {
            return null;
        }
        LogicalTypeRoot root = t.getTypeRoot();
        switch (root) {
            case BOOLEAN:
                return (Boolean) json;
            case TINYINT:
                return Byte.parseByte(((Json.Num) json).text);
            case SMALLINT:
                return Short.parseShort(((Json.Num) json).text);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return Integer.parseInt(((Json.Num) json).text);
            case BIGINT:
                return Long.parseLong(((Json.Num) json).text);
            case FLOAT:
                {
                    Map<String, Object> m = (Map<String, Object>) json;
                    int bits = Integer.parseUnsignedInt((String) m.get("bits"), 16);
                    return Float.intBitsToFloat(bits);
                }
            case DOUBLE:
                {
                    Map<String, Object> m = (Map<String, Object>) json;
                    long bits = Long.parseUnsignedLong((String) m.get("bits"), 16);
                    return Double.longBitsToDouble(bits);
                }
            case DECIMAL:
                return DecimalData.fromBigDecimal(
                        new BigDecimal((String) json),
                        LogicalTypeChecks.getPrecision(t),
                        LogicalTypeChecks.getScale(t));
            case CHAR:
            case VARCHAR:
                return StringData.fromString((String) json);
            case BINARY:
            case VARBINARY:
                return Hex.decode((String) json);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    Map<String, Object> m = (Map<String, Object>) json;
                    return TimestampData.fromEpochMillis(
                            ((Json.Num) m.get("millis")).asLong(),
                            ((Json.Num) m.get("nanoOfMilli")).asInt());
                }
            default:
                throw new IllegalArgumentException("unsupported type " + t);
        }
    }

    /** Flink internal object to the README's JSON form. */
    public static Object toJson(LogicalType t, Object v) {
        if (v == null) {
            return null;
        }
        switch (t.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
            case BIGINT:
                return v;
            case FLOAT:
                {
                    float f = (Float) v;
                    return new Json.Obj()
                            .put("bits", String.format("%08x", Float.floatToRawIntBits(f)))
                            .put("display", Float.toString(f));
                }
            case DOUBLE:
                {
                    double d = (Double) v;
                    return new Json.Obj()
                            .put("bits", String.format("%016x", Double.doubleToRawLongBits(d)))
                            .put("display", Double.toString(d));
                }
            case DECIMAL:
                return ((DecimalData) v).toBigDecimal().toPlainString();
            case CHAR:
            case VARCHAR:
                return v.toString();
            case BINARY:
            case VARBINARY:
                return Hex.encode((byte[]) v);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    TimestampData ts = (TimestampData) v;
                    return new Json.Obj()
                            .put("millis", ts.getMillisecond())
                            .put("nanoOfMilli", ts.getNanoOfMillisecond())
                            .put("iso", ts.toString());
                }
            default:
                throw new IllegalArgumentException("unsupported type " + t);
        }
    }

    public static Object[] toInternal(LogicalType[] types, List<Object> json) {
        if (types.length != json.size()) {
            throw new IllegalArgumentException(
                    types.length + " types but " + json.size() + " values");
        }
        Object[] out = new Object[types.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = toInternal(types[i], json.get(i));
        }
        return out;
    }

    public static List<Object> toJson(LogicalType[] types, Object[] values) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < types.length; i++) {
            out.add(toJson(types[i], values[i]));
        }
        return out;
    }

    /** Checks the README's value invariants (fits the type, truncated to the precision). */
    public static void checkValue(LogicalType t, Object v) {
        if (v == null) {
            return;
        }
        switch (t.getTypeRoot()) {
            case CHAR:
                {
                    String s = v.toString();
                    int n = LogicalTypeChecks.getLength(t);
                    if (s.codePointCount(0, s.length()) != n) {
                        throw new IllegalStateException("CHAR(" + n + ") value " + s);
                    }
                    break;
                }
            case VARCHAR:
                {
                    String s = v.toString();
                    int n = LogicalTypeChecks.getLength(t);
                    if (s.codePointCount(0, s.length()) > n) {
                        throw new IllegalStateException("VARCHAR(" + n + ") value " + s);
                    }
                    break;
                }
            case BINARY:
                if (((byte[]) v).length != LogicalTypeChecks.getLength(t)) {
                    throw new IllegalStateException("BINARY length");
                }
                break;
            case VARBINARY:
                if (((byte[]) v).length > LogicalTypeChecks.getLength(t)) {
                    throw new IllegalStateException("VARBINARY length");
                }
                break;
            case TIME_WITHOUT_TIME_ZONE:
                {
                    int ms = (Integer) v;
                    int p = LogicalTypeChecks.getPrecision(t);
                    if (ms < 0 || ms >= 86_400_000 || (p < 3 && ms % POW10[3 - p] != 0)) {
                        throw new IllegalStateException("TIME(" + p + ") value " + ms);
                    }
                    break;
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    TimestampData ts = (TimestampData) v;
                    int p = LogicalTypeChecks.getPrecision(t);
                    TimestampData tr =
                            truncate(ts.getMillisecond(), ts.getNanoOfMillisecond(), p);
                    if (!tr.equals(ts)) {
                        throw new IllegalStateException("TIMESTAMP(" + p + ") not truncated");
                    }
                    break;
                }
            default:
                break;
        }
    }

    // ------------------------------------------------------------ random inputs

    static final long[] POW10 = new long[19];

    static {
        POW10[0] = 1;
        for (int i = 1; i < POW10.length; i++) {
            POW10[i] = POW10[i - 1] * 10;
        }
    }

    /** Earliest and latest instants of years 0001..9999 (UTC). */
    static final long MIN_MILLIS = -62_135_596_800_000L;

    static final long MAX_MILLIS = 253_402_300_799_999L;
    static final int MIN_DATE = -719_162;
    static final int MAX_DATE = 2_932_896;

    /** Truncates (floor) an instant to precision p, 0..9. */
    public static TimestampData truncate(long millis, int nanoOfMilli, int p) {
        long sec = Math.floorDiv(millis, 1000L);
        long nanoOfSec = Math.floorMod(millis, 1000L) * 1_000_000L + nanoOfMilli;
        long unit = POW10[9 - p];
        nanoOfSec -= nanoOfSec % unit;
        return TimestampData.fromEpochMillis(
                sec * 1000L + nanoOfSec / 1_000_000L, (int) (nanoOfSec % 1_000_000L));
    }

    /** Alphabet of the random strings (code points). */
    static final int[] SPECIAL_CHARS = {
        0, 'é', 'ß', 'ж', '日', '本', '€', '✓', 0x1F600, 0x1D11E,
    };

    static final int[] EXTENDED_SPECIAL_CHARS = {
        0, 1, 0x1f, 0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000, 0x1F600, 0x1F4A9,
        0x1D11E, 0x20000, 0x2A6D6, 0xE0001, 0x10FFFF, 'é', 'ß', 'ж', '日', '本', '€', '✓',
        0x0301, 0x200D, 0x2028,
    };

    public static int randomCodePoint(SplitMix64 r, boolean extended) {
        if (r.chance(6, 10)) {
            return 0x20 + r.nextInt(0x7f - 0x20);
        }
        return extended ? r.pick(EXTENDED_SPECIAL_CHARS) : r.pick(SPECIAL_CHARS);
    }

    public static String randomString(SplitMix64 r, int codePoints, boolean extended) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < codePoints; i++) {
            sb.appendCodePoint(randomCodePoint(r, extended));
        }
        return sb.toString();
    }

    static float randomFloat(SplitMix64 r, boolean extended) {
        if (r.chance(1, 8)) {
            float[] edges = {0.0f, -0.0f, 1.0f, -1.0f, Float.MIN_VALUE, Float.MAX_VALUE,
                Float.MIN_NORMAL, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN};
            return edges[r.nextInt(edges.length)];
        }
        if (extended && r.chance(1, 8)) {
            // NaN with a random payload (sign and payload kept as raw bits).
            int bits = 0x7f800000 | (r.nextInt() & 0x007fffff) | (r.nextInt() & 0x80000000);
            if ((bits & 0x007fffff) == 0) {
                bits |= 1;
            }
            return Float.intBitsToFloat(bits);
        }
        double mant = (r.nextLong() >> 11) * 0x1.0p-52;
        int exp = r.rangeInt(-10, 10);
        return (float) (mant * Math.pow(10, exp));
    }

    static double randomDouble(SplitMix64 r, boolean extended) {
        if (r.chance(1, 8)) {
            double[] edges = {0.0, -0.0, 1.0, -1.0, Double.MIN_VALUE, Double.MAX_VALUE,
                Double.MIN_NORMAL, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.NaN};
            return edges[r.nextInt(edges.length)];
        }
        if (extended && r.chance(1, 8)) {
            long bits = 0x7ff0000000000000L | (r.nextLong() & 0x000fffffffffffffL)
                    | (r.nextLong() & 0x8000000000000000L);
            if ((bits & 0x000fffffffffffffL) == 0) {
                bits |= 1;
            }
            return Double.longBitsToDouble(bits);
        }
        double mant = (r.nextLong() >> 11) * 0x1.0p-52;
        int exp = r.rangeInt(-15, 15);
        return mant * Math.pow(10, exp);
    }

    static BigInteger randomDigits(SplitMix64 r, int digits) {
        StringBuilder sb = new StringBuilder();
        sb.append((char) ('1' + r.nextInt(9)));
        for (int i = 1; i < digits; i++) {
            sb.append((char) ('0' + r.nextInt(10)));
        }
        return new BigInteger(sb.toString());
    }

    static DecimalData decimal(BigInteger unscaled, int p, int s) {
        DecimalData d = DecimalData.fromBigDecimal(new BigDecimal(unscaled, s), p, s);
        if (d == null) {
            throw new IllegalStateException("decimal does not fit " + unscaled + " " + p + "," + s);
        }
        return d;
    }

    static DecimalData randomDecimal(SplitMix64 r, int p, int s) {
        BigInteger max = BigInteger.TEN.pow(p).subtract(BigInteger.ONE);
        if (r.chance(1, 8)) {
            BigInteger[] edges = {BigInteger.ZERO, BigInteger.ONE, BigInteger.ONE.negate(), max,
                max.negate()};
            return decimal(edges[r.nextInt(edges.length)], p, s);
        }
        BigInteger u = randomDigits(r, 1 + r.nextInt(p));
        if (r.nextBoolean()) {
            u = u.negate();
        }
        return decimal(u, p, s);
    }

    static TimestampData randomTimestamp(SplitMix64 r, int p) {
        long millis;
        int nano = r.nextInt(1_000_000);
        int pick = r.nextInt(10);
        if (pick == 0) {
            long[] edges = {0, -1, -1000, -86_400_000L, MIN_MILLIS, MAX_MILLIS, 1};
            millis = r.pick(edges);
        } else if (pick <= 2) {
            millis = r.range(-3_000_000_000_000L, 3_000_000_000_000L); // 1875..2065
        } else {
            millis = r.range(MIN_MILLIS, MAX_MILLIS);
        }
        return truncate(millis, nano, p);
    }

    static int randomTime(SplitMix64 r, int p) {
        int ms;
        if (r.chance(1, 6)) {
            int[] edges = {0, 1000, 43_200_000, 86_399_000, 86_399_999};
            ms = r.pick(edges);
        } else {
            ms = r.nextInt(86_400_000);
        }
        int unit = (int) POW10[3 - Math.min(p, 3)];
        return ms - ms % unit;
    }

    static int randomInt(SplitMix64 r) {
        int pick = r.nextInt(8);
        if (pick == 0) {
            int[] edges = {0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE,
                Integer.MIN_VALUE + 1, 0xcc9e2d51, 0x1b873593, 0xe6546b64, 0x85ebca6b,
                0xc2b2ae35, -2089875627, -1035494534};
            return r.pick(edges);
        }
        if (pick <= 2) {
            return r.rangeInt(-1000, 1000);
        }
        return r.nextInt();
    }

    static long randomLong(SplitMix64 r) {
        int pick = r.nextInt(8);
        if (pick == 0) {
            long[] edges = {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 31, 1L << 32,
                -(1L << 32), (1L << 32) - 1, Integer.MIN_VALUE, Integer.MAX_VALUE};
            return r.pick(edges);
        }
        if (pick <= 2) {
            return r.range(-100_000, 100_000);
        }
        return r.nextLong();
    }

    /** A random internal value of type t (never null; the caller decides about nulls). */
    public static Object random(SplitMix64 r, LogicalType t, boolean extended) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return r.nextBoolean();
            case TINYINT:
                if (r.chance(1, 5)) {
                    byte[] e = {0, 1, -1, 127, -128};
                    return e[r.nextInt(e.length)];
                }
                return (byte) r.nextInt();
            case SMALLINT:
                if (r.chance(1, 5)) {
                    short[] e = {0, 1, -1, 32767, -32768};
                    return e[r.nextInt(e.length)];
                }
                return (short) r.nextInt();
            case INTEGER:
                return randomInt(r);
            case BIGINT:
                return randomLong(r);
            case FLOAT:
                return randomFloat(r, extended);
            case DOUBLE:
                return randomDouble(r, extended);
            case DECIMAL:
                return randomDecimal(
                        r, LogicalTypeChecks.getPrecision(t), LogicalTypeChecks.getScale(t));
            case CHAR:
                {
                    int n = LogicalTypeChecks.getLength(t);
                    if (r.chance(1, 10)) {
                        StringBuilder sb = new StringBuilder("a");
                        while (sb.length() < n) {
                            sb.append(' ');
                        }
                        return StringData.fromString(sb.toString());
                    }
                    return StringData.fromString(randomString(r, n, extended));
                }
            case VARCHAR:
                {
                    int n = LogicalTypeChecks.getLength(t);
                    int len;
                    if (n == Integer.MAX_VALUE) { // STRING
                        len = r.chance(1, 8) ? r.nextInt(200) : r.nextInt(17);
                    } else {
                        len = r.nextInt(Math.min(n, 200) + 1);
                    }
                    if (r.chance(1, 20)) {
                        return StringData.fromString(repeat('\0', Math.min(8, len)));
                    }
                    return StringData.fromString(randomString(r, len, extended));
                }
            case BINARY:
                {
                    int n = LogicalTypeChecks.getLength(t);
                    if (r.chance(1, 8)) {
                        byte[] b = new byte[n];
                        java.util.Arrays.fill(b, r.nextBoolean() ? (byte) 0 : (byte) 0xff);
                        return b;
                    }
                    return r.bytes(n);
                }
            case VARBINARY:
                {
                    int n = LogicalTypeChecks.getLength(t);
                    int len = n == Integer.MAX_VALUE ? r.nextInt(48) : r.nextInt(Math.min(n, 200) + 1);
                    return r.bytes(len);
                }
            case DATE:
                if (r.chance(1, 8)) {
                    int[] e = {0, 1, -1, MIN_DATE, MAX_DATE};
                    return r.pick(e);
                }
                return r.rangeInt(MIN_DATE, MAX_DATE);
            case TIME_WITHOUT_TIME_ZONE:
                return randomTime(r, LogicalTypeChecks.getPrecision(t));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return randomTimestamp(r, LogicalTypeChecks.getPrecision(t));
            default:
                throw new IllegalArgumentException("unsupported type " + t);
        }
    }

    static String repeat(char c, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(c);
        }
        return sb.toString();
    }
}
