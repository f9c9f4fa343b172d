package io.github.rebalancelab.connect;

import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** VerifiableSourceConnector's task. Its source partition is {"task": id}, its offset {"seqno": n}. */
public class VerifiableSourceTask extends SourceTask {
    private String topic;
    private int id;
    private long intervalMs;
    private long seqno;
    private long nextMs;
    private Map<String, Object> partition;
    private Events events;

    @Override
    public String version() {
        return "3.9.2-rebalancelab";
    }

    @Override
    public void start(Map<String, String> props) {
        topic = props.get(VerifiableSourceConnector.TOPIC_CONFIG);
        id = Integer.parseInt(props.get(VerifiableSourceConnector.TASK_ID_CONFIG));
        long throughput = Long.parseLong(props.getOrDefault(VerifiableSourceConnector.THROUGHPUT_CONFIG, "10"));
        intervalMs = Math.max(1, 1000 / Math.max(1, throughput));
        partition = Map.of("task", id);
        Map<String, Object> committed = context.offsetStorageReader().offset(partition);
        if (committed != null && committed.get("seqno") instanceof Number n) {
            seqno = n.longValue() + 1;
        }
        events = new Events(props.get(Events.DIR_CONFIG), props.get("name"), id);
        events.write("start", "\"seqno\":" + seqno);
        nextMs = System.currentTimeMillis();
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        long wait = nextMs - System.currentTimeMillis();
        if (wait > 0) {
            Thread.sleep(wait);
        }
        nextMs += intervalMs;
        long n = seqno++;
        return List.of(new SourceRecord(partition, Map.of("seqno", n), topic, null, Schema.STRING_SCHEMA,
            Integer.toString(id), Schema.STRING_SCHEMA, id + ":" + n));
    }

    @Override
    public void commitRecord(SourceRecord record, RecordMetadata metadata) {
        if (metadata == null) {
            return; // filtered by a transformation: never sent
        }
        events.write("produced", "\"seqno\":" + record.sourceOffset().get("seqno") + ",\"partition\":"
            + metadata.partition() + ",\"offset\":" + metadata.offset());
    }

    @Override
    public void stop() {
        if (events != null) {
            events.write("stop", "\"seqno\":" + seqno);
            events.close();
        }
    }
}
