package flinkoperators;

import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;

/** Type strings of the fixtures' schema to Flink logical types. */
final class Types {
    private Types() {}

    static LogicalType logical(String type) {
        return LogicalTypeParser.parse(type, Types.class.getClassLoader());
    }
}
