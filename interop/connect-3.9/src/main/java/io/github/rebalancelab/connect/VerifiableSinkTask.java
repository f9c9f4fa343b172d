package io.github.rebalancelab.connect;

import java.util.Collection;
import java.util.Map;

import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/** VerifiableSinkConnector's task. */
public class VerifiableSinkTask extends SinkTask {
    private Events events;

    @Override
    public String version() {
        return "3.9.2-rebalancelab";
    }

    @Override
    public void start(Map<String, String> props) {
        int id = Integer.parseInt(props.get(VerifiableSourceConnector.TASK_ID_CONFIG));
        events = new Events(props.get(Events.DIR_CONFIG), props.get("name"), id);
        events.write("start", "");
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        for (SinkRecord r : records) {
            events.write("consumed", "\"value\":\"" + r.value() + "\",\"topic\":\"" + r.topic() + "\",\"partition\":"
                + r.kafkaPartition() + ",\"offset\":" + r.kafkaOffset());
        }
    }

    @Override
    public void stop() {
        if (events != null) {
            events.write("stop", "");
            events.close();
        }
    }
}
