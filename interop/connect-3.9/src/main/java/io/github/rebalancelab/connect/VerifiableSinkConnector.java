package io.github.rebalancelab.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink whose task count follows tasks.max (Kafka's connect/test-plugins VerifiableSinkConnector,
 * which Maven Central does not serve): every task logs each record put to it ("consumed": the value,
 * "i:seqno" from VerifiableSourceConnector, and its topic, partition and offset) to its Events file.
 */
public class VerifiableSinkConnector extends SinkConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return VerifiableSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> c = new HashMap<>(props);
            c.put(VerifiableSourceConnector.TASK_ID_CONFIG, Integer.toString(i));
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
            .define(Events.DIR_CONFIG, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "directory of the tasks' event files");
    }

    @Override
    public String version() {
        return "3.9.2-rebalancelab";
    }
}
