package flinkoracle;

import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.BinaryRowDataSerializer;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/** The three ways of building a {@link BinaryRowData} (README, binary_rows.jsonl). */
public final class FlinkRows {
    private FlinkRows() {}

    public static final String WRITER = "writer";
    public static final String ROW_DATA_SERIALIZER = "row_data_serializer";
    public static final String KEY_SELECTOR = "key_selector";
    public static final String[] PATHS = {WRITER, ROW_DATA_SERIALIZER, KEY_SELECTOR};

    public static BinaryRowData build(
            String path, LogicalType[] types, Object[] values, RowKind kind) {
        switch (path) {
            case WRITER:
                return viaWriter(types, values, kind);
            case ROW_DATA_SERIALIZER:
                return viaRowDataSerializer(types, values, kind);
            case KEY_SELECTOR:
                return viaKeySelector(types, values, kind);
            default:
                throw new IllegalArgumentException("unknown path " + path);
        }
    }

    /**
     * {@code BinaryRowWriter} with the typed calls of the planner's generated projections; a null
     * non-compact DECIMAL/TIMESTAMP goes through {@code writeDecimal/writeTimestamp(pos, null, p)}.
     */
    public static BinaryRowData viaWriter(LogicalType[] types, Object[] values, RowKind kind) {
        BinaryRowData row = new BinaryRowData(types.length);
        BinaryRowWriter w = new BinaryRowWriter(row);
        w.reset();
        w.writeRowKind(kind);
        for (int i = 0; i < types.length; i++) {
            LogicalType t = types[i];
            Object v = values[i];
            switch (t.getTypeRoot()) {
                case DECIMAL:
                    {
                        int p = LogicalTypeChecks.getPrecision(t);
                        if (v == null && DecimalData.isCompact(p)) {
                            w.setNullAt(i);
                        } else {
                            w.writeDecimal(i, (DecimalData) v, p);
                        }
                        break;
                    }
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                    {
                        int p = LogicalTypeChecks.getPrecision(t);
                        if (v == null && TimestampData.isCompact(p)) {
                            w.setNullAt(i);
                        } else {
                            w.writeTimestamp(i, (TimestampData) v, p);
                        }
                        break;
                    }
                default:
                    if (v == null) {
                        w.setNullAt(i);
                        break;
                    }
                    switch (t.getTypeRoot()) {
                        case BOOLEAN:
                            w.writeBoolean(i, (Boolean) v);
                            break;
                        case TINYINT:
                            w.writeByte(i, (Byte) v);
                            break;
                        case SMALLINT:
                            w.writeShort(i, (Short) v);
                            break;
                        case INTEGER:
                        case DATE:
                        case TIME_WITHOUT_TIME_ZONE:
                            w.writeInt(i, (Integer) v);
                            break;
                        case BIGINT:
                            w.writeLong(i, (Long) v);
                            break;
                        case FLOAT:
                            w.writeFloat(i, (Float) v);
                            break;
                        case DOUBLE:
                            w.writeDouble(i, (Double) v);
                            break;
                        case CHAR:
                        case VARCHAR:
                            w.writeString(i, (StringData) v);
                            break;
                        case BINARY:
                        case VARBINARY:
                            w.writeBinary(i, (byte[]) v);
                            break;
                        default:
                            throw new IllegalArgumentException("unsupported type " + t);
                    }
            }
        }
        w.complete();
        return row;
    }

    /** {@code new RowDataSerializer(types).toBinaryRow(GenericRowData.ofKind(kind, values))}. */
    public static BinaryRowData viaRowDataSerializer(
            LogicalType[] types, Object[] values, RowKind kind) {
        RowDataSerializer ser = new RowDataSerializer(types);
        // toBinaryRow reuses one row object per serializer; copy so the result is ours.
        return ser.toBinaryRow(GenericRowData.ofKind(kind, values)).copy();
    }

    private static final Map<String, RowDataKeySelector> SELECTORS = new HashMap<>();

    /**
     * The Flink SQL keyed-state path: {@code KeySelectorUtil.getRowDataSelector(cl, [1..n],
     * InternalTypeInfo.ofFields(BIGINT, types...))} (planner code generation), then {@code
     * getKey(GenericRowData.ofKind(kind, 7L, values...))}.
     */
    public static BinaryRowData viaKeySelector(
            LogicalType[] types, Object[] values, RowKind kind) {
        RowDataKeySelector sel = SELECTORS.computeIfAbsent(typesKey(types), k -> selector(types));
        Object[] input = new Object[types.length + 1];
        input[0] = 7L;
        System.arraycopy(values, 0, input, 1, values.length);
        RowData key;
        try {
            key = sel.getKey(GenericRowData.ofKind(kind, input));
        } catch (Exception e) {
            throw new RuntimeException("key selector failed", e);
        }
        // The projection may reuse its output row; copy it before the next call.
        return ((BinaryRowData) key).copy();
    }

    private static String typesKey(LogicalType[] types) {
        StringBuilder sb = new StringBuilder();
        for (LogicalType t : types) {
            sb.append(t.asSerializableString()).append('\u0001');
        }
        return sb.toString();
    }

    private static RowDataKeySelector selector(LogicalType[] types) {
        LogicalType[] all = new LogicalType[types.length + 1];
        all[0] = new BigIntType();
        System.arraycopy(types, 0, all, 1, types.length);
        int[] keyFields = new int[types.length];
        for (int i = 0; i < keyFields.length; i++) {
            keyFields[i] = i + 1;
        }
        RowDataKeySelector sel =
                KeySelectorUtil.getRowDataSelector(
                        FlinkRows.class.getClassLoader(), keyFields, InternalTypeInfo.ofFields(all));
        // n > 0: planner code generation (GeneratedProjection) behind BinaryRowDataKeySelector;
        // n == 0: Flink's EmptyRowDataKeySelector (the global-aggregation key).
        String expected = types.length > 0 ? "BinaryRowDataKeySelector" : "EmptyRowDataKeySelector";
        if (!sel.getClass().getSimpleName().equals(expected)) {
            throw new IllegalStateException("unexpected key selector " + sel.getClass());
        }
        return sel;
    }

    /** {@code BinarySegmentUtils.copyToBytes(segments, offset, sizeInBytes)}. */
    public static byte[] bytes(BinaryRowData row) {
        return BinarySegmentUtils.copyToBytes(
                row.getSegments(), row.getOffset(), row.getSizeInBytes());
    }

    /**
     * {@code new BinaryRowDataSerializer(arity).serialize(row, new DataOutputSerializer(64))};
     * also checks that {@code RowDataSerializer(types).serialize} writes the same bytes.
     */
    public static byte[] serialized(BinaryRowData row, LogicalType[] types) {
        try {
            DataOutputSerializer out = new DataOutputSerializer(64);
            new BinaryRowDataSerializer(row.getArity()).serialize(row, out);
            byte[] a = out.getCopyOfBuffer();
            DataOutputSerializer out2 = new DataOutputSerializer(64);
            new RowDataSerializer(types).serialize(row, out2);
            byte[] b = out2.getCopyOfBuffer();
            if (!Arrays.equals(a, b)) {
                throw new IllegalStateException(
                        "RowDataSerializer and BinaryRowDataSerializer disagree");
            }
            return a;
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
