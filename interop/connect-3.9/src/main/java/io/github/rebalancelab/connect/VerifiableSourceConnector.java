package io.github.rebalancelab.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source whose task count follows tasks.max (Kafka's connect/test-plugins VerifiableSourceConnector,
 * which Maven Central does not serve): task i produces "i:seqno" (seqno 0, 1, ... resumed from its
 * committed source offset) to "topic" at "throughput" records per second, and logs every record the
 * broker acknowledged ("produced", from commitRecord) to its Events file.
 */
public class VerifiableSourceConnector extends SourceConnector {
    static final String TOPIC_CONFIG = "topic";
    static final String THROUGHPUT_CONFIG = "throughput";
    static final String TASK_ID_CONFIG = "task.id";

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return VerifiableSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> c = new HashMap<>(props);
            c.put(TASK_ID_CONFIG, Integer.toString(i));
            configs.add(c);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
            .define(TOPIC_CONFIG, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the topic to produce to")
            .define(THROUGHPUT_CONFIG, ConfigDef.Type.LONG, 10L, ConfigDef.Importance.HIGH, "records per second per task")
            .define(Events.DIR_CONFIG, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "directory of the tasks' event files");
    }

    @Override
    public String version() {
        return "3.9.2-rebalancelab";
    }
}
