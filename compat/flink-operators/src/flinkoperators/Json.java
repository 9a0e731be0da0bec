package flinkoperators;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.TimestampType;

/**
 * JSON output: the case.json layout of the shared fixtures (containers holding only scalars or lists of
 * scalars on one line, everything else one element per line, two-space indent) and the README's value
 * encoding of Flink's external Java values.
 */
final class Json {
    private Json() {}

    /** A pre-rendered JSON fragment written verbatim. */
    record Raw(String text) {}

    static String pretty(Object v) {
        StringBuilder sb = new StringBuilder();
        write(sb, v, 0);
        sb.append('\n');
        return sb.toString();
    }

    private static boolean isScalar(Object v) {
        return !(v instanceof Map) && !(v instanceof List);
    }

    private static boolean inline(Object v) {
        java.util.Collection<?> items = v instanceof Map<?, ?> m ? m.values() : (List<?>) v;
        for (Object o : items) {
            if (isScalar(o)) {
                continue;
            }
            if (o instanceof List<?> l && l.stream().allMatch(Json::isScalar)) {
                continue;
            }
            return false;
        }
        return true;
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        if (isScalar(v)) {
            sb.append(scalar(v));
            return;
        }
        boolean one = inline(v);
        String pad = " ".repeat(indent + 2);
        boolean isMap = v instanceof Map;
        sb.append(isMap ? '{' : '[');
        java.util.Collection<?> items = isMap ? ((Map<?, ?>) v).entrySet() : (List<?>) v;
        if (items.isEmpty()) {
            sb.append(isMap ? '}' : ']');
            return;
        }
        boolean first = true;
        for (Object o : items) {
            if (!first) {
                sb.append(one ? ", " : ",");
            }
            first = false;
            if (!one) {
                sb.append('\n').append(pad);
            }
            Object val = o;
            if (isMap) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                sb.append(str((String) e.getKey())).append(": ");
                val = e.getValue();
            }
            if (one) {
                writeInline(sb, val);
            } else {
                write(sb, val, indent + 2);
            }
        }
        if (!one) {
            sb.append('\n').append(" ".repeat(indent));
        }
        sb.append(isMap ? '}' : ']');
    }

    private static void writeInline(StringBuilder sb, Object v) {
        if (isScalar(v)) {
            sb.append(scalar(v));
            return;
        }
        boolean isMap = v instanceof Map;
        sb.append(isMap ? '{' : '[');
        boolean first = true;
        java.util.Collection<?> items = isMap ? ((Map<?, ?>) v).entrySet() : (List<?>) v;
        for (Object o : items) {
            if (!first) {
                sb.append(", ");
            }
            first = false;
            if (isMap) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                sb.append(str((String) e.getKey())).append(": ");
                writeInline(sb, e.getValue());
            } else {
                writeInline(sb, o);
            }
        }
        sb.append(isMap ? '}' : ']');
    }

    private static String scalar(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Raw r) {
            return r.text();
        }
        if (v instanceof String s) {
            return str(s);
        }
        return v.toString();
    }

    /** A JSON string literal (non-ASCII escaped as \\uXXXX). */
    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }

    /** One value in the README's encoding, given its Flink logical type. */
    static String value(Object v, LogicalType t) {
        if (v == null) {
            return "null";
        }
        switch (t.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case DATE:
                if (v instanceof java.time.LocalDate d) {
                    return Long.toString(d.toEpochDay());
                }
                return v.toString();
            case BIGINT:
                return "\"" + v + "\"";
            case FLOAT:
                return floating(((Float) v).doubleValue(), true);
            case DOUBLE:
                return floating((Double) v, false);
            case DECIMAL:
                return "\"" + ((BigDecimal) v).setScale(((DecimalType) t).getScale()).toPlainString() + "\"";
            case CHAR:
            case VARCHAR:
                return str((String) v);
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                Instant i = ((LocalDateTime) v).toInstant(ZoneOffset.UTC);
                return timestamp(i, ((TimestampType) t).getPrecision());
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return timestamp((Instant) v, ((LocalZonedTimestampType) t).getPrecision());
            default:
                throw new IllegalArgumentException("no JSON encoding for type " + t);
        }
    }

    private static String timestamp(Instant i, int precision) {
        long millis = Math.floorDiv(i.getEpochSecond(), 1L) * 1000 + i.getNano() / 1_000_000;
        if (precision <= 3) {
            return "\"" + millis + "\"";
        }
        return "\"" + millis + "." + String.format("%06d", i.getNano() % 1_000_000) + "\"";
    }

    /** Shortest round-trip form (as Python's repr), NaN/Infinity as strings, -0.0 keeps its sign. */
    static String floating(double d, boolean isFloat) {
        if (Double.isNaN(d)) {
            return "\"NaN\"";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        BigDecimal exact = new BigDecimal(d);
        BigDecimal b = exact;
        for (int p = 1; p <= 17; p++) {
            BigDecimal r = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
            boolean same = isFloat ? r.floatValue() == (float) d : r.doubleValue() == d;
            if (same) {
                b = r;
                break;
            }
        }
        b = b.stripTrailingZeros();
        int exp = b.precision() - b.scale() - 1;
        if (exp >= -4 && exp < 16) {
            String s = b.toPlainString();
            return s.contains(".") ? s : s + ".0";
        }
        String digits = b.unscaledValue().abs().toString();
        String mant = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        String e = String.format("%02d", Math.abs(exp));
        return (b.signum() < 0 ? "-" : "") + mant + "e" + (exp < 0 ? "-" : "+") + e;
    }
}
