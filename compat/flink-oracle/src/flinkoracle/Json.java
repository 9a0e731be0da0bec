package flinkoracle;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Minimal JSON support for the vector files.
 *
 * <p>Writing: an ordered object builder ({@link Obj}) whose {@code toString()} is one compact
 * JSON line in the exact style of the vector files (no spaces, raw UTF-8, control characters as
 * backslash-u00xx, integers exact).
 *
 * <p>Reading: a small recursive-descent parser. Numbers are kept as {@link Num} (their source
 * text), so integers of any size stay exact. Objects become {@link LinkedHashMap} (key order
 * kept), arrays {@link ArrayList}, strings {@link String}, booleans {@link Boolean}, null {@code
 * null}.
 */
public final class Json {
    private Json() {}

    /** A JSON number, kept as its text. */
    public static final class Num {
        public final String text;

        public Num(String text) {
            this.text = text;
        }

        public long asLong() {
            return Long.parseLong(text);
        }

        public int asInt() {
            return Integer.parseInt(text);
        }

        public BigInteger asBigInteger() {
            return new BigInteger(text);
        }

        public double asDouble() {
            return Double.parseDouble(text);
        }

        @Override
        public String toString() {
            return text;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Num && ((Num) o).text.equals(text);
        }

        @Override
        public int hashCode() {
            return text.hashCode();
        }
    }

    /** Raw JSON text inserted verbatim (used for doubles printed by {@code Double.toString}). */
    public static final class Raw {
        public final String text;

        public Raw(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** Ordered JSON object builder. */
    public static final class Obj {
        private final LinkedHashMap<String, Object> fields = new LinkedHashMap<>();

        public Obj put(String key, Object value) {
            if (fields.containsKey(key)) {
                throw new IllegalStateException("duplicate key " + key);
            }
            fields.put(key, value);
            return this;
        }

        public Map<String, Object> fields() {
            return fields;
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            write(sb, this);
            return sb.toString();
        }
    }

    public static String write(Object v) {
        StringBuilder sb = new StringBuilder();
        write(sb, v);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    public static void write(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Obj) {
            writeMap(sb, ((Obj) v).fields);
        } else if (v instanceof Map) {
            writeMap(sb, (Map<String, Object>) v);
        } else if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object e : (List<Object>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                write(sb, e);
            }
            sb.append(']');
        } else if (v instanceof String) {
            writeString(sb, (String) v);
        } else if (v instanceof Boolean) {
            sb.append(((Boolean) v) ? "true" : "false");
        } else if (v instanceof Integer
                || v instanceof Long
                || v instanceof Short
                || v instanceof Byte
                || v instanceof BigInteger) {
            sb.append(v.toString());
        } else if (v instanceof Num || v instanceof Raw) {
            sb.append(v.toString());
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass() + " as JSON");
        }
    }

    private static void writeMap(StringBuilder sb, Map<String, Object> m) {
        sb.append('{');
        boolean first = true;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            writeString(sb, e.getKey());
            sb.append(':');
            write(sb, e.getValue());
        }
        sb.append('}');
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    public static void writeString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') {
                sb.append("\\\"");
            } else if (c == '\\') {
                sb.append("\\\\");
            } else if (c < 0x20) {
                sb.append("\\u00").append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
            } else {
                if (Character.isSurrogate(c)) {
                    boolean paired =
                            Character.isHighSurrogate(c)
                                    && i + 1 < s.length()
                                    && Character.isLowSurrogate(s.charAt(i + 1));
                    if (!paired) {
                        throw new IllegalArgumentException(
                                "lone surrogate cannot be written as UTF-8 JSON");
                    }
                    sb.append(c).append(s.charAt(++i));
                    continue;
                }
                sb.append(c);
            }
        }
        sb.append('"');
    }

    // ------------------------------------------------------------------ parsing

    public static Object parse(String text) {
        Parser p = new Parser(text);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.pos != text.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> parseObject(String text) {
        Object v = parse(text);
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("not a JSON object: " + text);
        }
        return (Map<String, Object>) v;
    }

    private static final class Parser {
        final String s;
        int pos;

        Parser(String s) {
            this.s = s;
        }

        IllegalArgumentException error(String msg) {
            return new IllegalArgumentException(msg + " at offset " + pos);
        }

        void ws() {
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    pos++;
                } else {
                    break;
                }
            }
        }

        Object value() {
            if (pos >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(pos);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    expect("true");
                    return Boolean.TRUE;
                case 'f':
                    expect("false");
                    return Boolean.FALSE;
                case 'n':
                    expect("null");
                    return null;
                default:
                    return number();
            }
        }

        void expect(String word) {
            if (!s.startsWith(word, pos)) {
                throw error("expected " + word);
            }
            pos += word.length();
        }

        Map<String, Object> object() {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            pos++;
            ws();
            if (s.charAt(pos) == '}') {
                pos++;
                return m;
            }
            while (true) {
                ws();
                if (s.charAt(pos) != '"') {
                    throw error("expected key");
                }
                String k = string();
                ws();
                if (s.charAt(pos) != ':') {
                    throw error("expected :");
                }
                pos++;
                ws();
                Object v = value();
                if (m.containsKey(k)) {
                    throw error("duplicate key " + k);
                }
                m.put(k, v);
                ws();
                char c = s.charAt(pos++);
                if (c == '}') {
                    return m;
                }
                if (c != ',') {
                    throw error("expected , or }");
                }
            }
        }

        List<Object> array() {
            List<Object> l = new ArrayList<>();
            pos++;
            ws();
            if (s.charAt(pos) == ']') {
                pos++;
                return l;
            }
            while (true) {
                ws();
                l.add(value());
                ws();
                char c = s.charAt(pos++);
                if (c == ']') {
                    return l;
                }
                if (c != ',') {
                    throw error("expected , or ]");
                }
            }
        }

        String string() {
            pos++;
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (pos >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(pos++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                char e = s.charAt(pos++);
                switch (e) {
                    case '"':
                        sb.append('"');
                        break;
                    case '\\':
                        sb.append('\\');
                        break;
                    case '/':
                        sb.append('/');
                        break;
                    case 'b':
                        sb.append('\b');
                        break;
                    case 'f':
                        sb.append('\f');
                        break;
                    case 'n':
                        sb.append('\n');
                        break;
                    case 'r':
                        sb.append('\r');
                        break;
                    case 't':
                        sb.append('\t');
                        break;
                    case 'u':
                        sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                        pos += 4;
                        break;
                    default:
                        throw error("bad escape");
                }
            }
        }

        Num number() {
            int start = pos;
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e'
                        || c == 'E') {
                    pos++;
                } else {
                    break;
                }
            }
            if (start == pos) {
                throw error("unexpected character");
            }
            return new Num(s.substring(start, pos));
        }
    }
}
