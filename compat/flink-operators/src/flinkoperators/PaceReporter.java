package flinkoperators;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * A metric reporter that only remembers, per job name, the {@code numRecordsIn} counter of the operator
 * whose name starts with "Join", so the paced source (same JVM, local MiniCluster) can wait for it.
 */
public final class PaceReporter implements MetricReporter {
    static final Map<String, Counter> JOIN_IN = new ConcurrentHashMap<>();

    /** Factory named in {@code metrics.reporter.pace.factory.class}. */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new PaceReporter();
        }
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
        if (!"numRecordsIn".equals(metricName) || !(metric instanceof Counter c)) {
            return;
        }
        Map<String, String> vars = group.getAllVariables();
        String op = vars.get("<operator_name>");
        String job = vars.get("<job_name>");
        if (System.getenv("PACE_DEBUG") != null) {
            System.err.println("pace: " + metricName + " " + vars);
        }
        if (op != null && job != null && op.startsWith("Join")) {
            JOIN_IN.put(job, c);
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {}
}
