package io.github.rebalancelab.streams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * The Streams application of rebalancelab's streams-threads scenario: two co-partitioned input topics
 * merged, stateless, into an output topic. Every output record's value names the input record it came
 * from ("topic/partition/offset"), so that the output topic alone says which inputs came out, and how
 * many times.
 *
 * <p>Usage: {@code MergeApp --bootstrap B --application-id A --client-id C --state-dir D --input T1,T2
 * --output T [--threads 3] [--config k=v ...]}. Every {@code --config} is a StreamsConfig key (or a
 * consumer/producer key, which Streams passes on), applied last.
 *
 * <p>stdout: one JSON object a line (flushed at each line, so a kill -9 loses nothing written):
 * {@code {"ev":"started"}}, {@code {"ev":"state","from":F,"to":T}}, {@code {"ev":"processed","thread":N,
 * "task":"0_1","topic":T,"partition":P,"offset":O,"out":V}}, {@code {"ev":"thread_added","thread":N}},
 * {@code {"ev":"thread_removed","thread":N}}, {@code {"ev":"threads","threads":[{"thread":N,"active":[
 * {"task":"0_1","partitions":["t-1",...]}]}]}} (after every change to RUNNING and on the "threads"
 * command), {@code {"ev":"error","text":...}}, {@code {"ev":"stopped"}}.
 *
 * <p>stdin commands, one a line: {@code remove-thread} (KafkaStreams.removeStreamThread), {@code
 * add-thread} (addStreamThread), {@code threads}, {@code stop} (close, then exit 0). The end of stdin is
 * a stop.
 */
public final class MergeApp {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private MergeApp() {}

    static synchronized void emit(String json) {
        OUT.println(json);
    }

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** Forwards every record unchanged in key, its value replaced by the input record's coordinates. */
    static final class Tag implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> ctx;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.ctx = context;
        }

        @Override
        public void process(Record<String, String> r) {
            Optional<RecordMetadata> md = ctx.recordMetadata();
            String topic = md.map(RecordMetadata::topic).orElse("");
            int partition = md.map(RecordMetadata::partition).orElse(-1);
            long offset = md.map(RecordMetadata::offset).orElse(-1L);
            String out = topic + "/" + partition + "/" + offset;
            ctx.forward(r.withValue(out));
            emit("{\"ev\":\"processed\",\"ts_ms\":" + System.currentTimeMillis() + ",\"thread\":"
                    + q(Thread.currentThread().getName()) + ",\"task\":" + q(ctx.taskId().toString())
                    + ",\"topic\":" + q(topic) + ",\"partition\":" + partition + ",\"offset\":" + offset
                    + ",\"out\":" + q(out) + "}");
        }
    }

    static String threads(KafkaStreams streams) {
        StringBuilder b = new StringBuilder("{\"ev\":\"threads\",\"ts_ms\":" + System.currentTimeMillis()
                + ",\"threads\":[");
        List<ThreadMetadata> ts = new ArrayList<>(streams.metadataForLocalThreads());
        ts.sort((x, y) -> x.threadName().compareTo(y.threadName()));
        for (int i = 0; i < ts.size(); i++) {
            ThreadMetadata t = ts.get(i);
            b.append(i == 0 ? "" : ",").append("{\"thread\":").append(q(t.threadName()))
                    .append(",\"state\":").append(q(t.threadState())).append(",\"active\":[");
            TreeMap<String, TaskMetadata> tasks = new TreeMap<>();
            for (TaskMetadata m : t.activeTasks()) {
                tasks.put(m.taskId().toString(), m);
            }
            int j = 0;
            for (TaskMetadata m : tasks.values()) {
                b.append(j++ == 0 ? "" : ",").append("{\"task\":").append(q(m.taskId().toString()))
                        .append(",\"partitions\":[");
                List<String> ps = new ArrayList<>();
                for (TopicPartition tp : m.topicPartitions()) {
                    ps.add(tp.topic() + "-" + tp.partition());
                }
                ps.sort(null);
                for (int k = 0; k < ps.size(); k++) {
                    b.append(k == 0 ? "" : ",").append(q(ps.get(k)));
                }
                b.append("]}");
            }
            b.append("]}");
        }
        return b.append("]}").toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = null, appId = null, clientId = null, stateDir = null, output = null;
        String[] inputs = null;
        int threads = 3;
        Properties extra = new Properties();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            if (v == null) {
                throw new IllegalArgumentException(a + ": needs a value");
            }
            i++;
            switch (a) {
                case "--bootstrap" -> bootstrap = v;
                case "--application-id" -> appId = v;
                case "--client-id" -> clientId = v;
                case "--state-dir" -> stateDir = v;
                case "--input" -> inputs = v.split(",");
                case "--output" -> output = v;
                case "--threads" -> threads = Integer.parseInt(v);
                case "--config" -> {
                    int eq = v.indexOf('=');
                    if (eq < 1) {
                        throw new IllegalArgumentException("--config " + v + ": want key=value");
                    }
                    extra.setProperty(v.substring(0, eq), v.substring(eq + 1));
                }
                default -> throw new IllegalArgumentException("unknown flag " + a);
            }
        }
        if (bootstrap == null || appId == null || clientId == null || stateDir == null || inputs == null
                || output == null) {
            throw new IllegalArgumentException(
                    "want --bootstrap --application-id --client-id --state-dir --input T1,T2 --output T");
        }

        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.toString(threads));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putAll(extra);

        StreamsBuilder builder = new StreamsBuilder();
        Consumed<String, String> c = Consumed.with(Serdes.String(), Serdes.String());
        KStream<String, String> merged = builder.stream(inputs[0], c);
        for (int i = 1; i < inputs.length; i++) {
            merged = merged.merge(builder.stream(inputs[i], c));
        }
        merged.process(Tag::new).to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((to, from) -> {
            emit("{\"ev\":\"state\",\"ts_ms\":" + System.currentTimeMillis() + ",\"from\":" + q(from.name())
                    + ",\"to\":" + q(to.name()) + "}");
            if (to == KafkaStreams.State.RUNNING) {
                emit(threads(streams));
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"ev\":\"error\",\"ts_ms\":" + System.currentTimeMillis() + ",\"text\":" + q(String.valueOf(e))
                    + "}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .REPLACE_THREAD;
        });
        streams.start();
        emit("{\"ev\":\"started\",\"ts_ms\":" + System.currentTimeMillis() + ",\"threads\":" + threads + "}");

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            switch (line.trim()) {
                case "remove-thread" -> {
                    Optional<String> t = streams.removeStreamThread(Duration.ofSeconds(30));
                    emit("{\"ev\":\"thread_removed\",\"ts_ms\":" + System.currentTimeMillis() + ",\"thread\":"
                            + q(t.orElse("")) + "}");
                }
                case "add-thread" -> {
                    Optional<String> t = streams.addStreamThread();
                    emit("{\"ev\":\"thread_added\",\"ts_ms\":" + System.currentTimeMillis() + ",\"thread\":"
                            + q(t.orElse("")) + "}");
                }
                case "threads" -> emit(threads(streams));
                case "stop" -> {
                    break;
                }
                case "" -> {
                    continue;
                }
                default -> emit("{\"ev\":\"error\",\"ts_ms\":" + System.currentTimeMillis()
                        + ",\"text\":" + q("unknown command " + line.trim()) + "}");
            }
            if (line.trim().equals("stop")) {
                break;
            }
        }
        streams.close(Duration.ofSeconds(30));
        emit("{\"ev\":\"stopped\",\"ts_ms\":" + System.currentTimeMillis() + "}");
        System.exit(0);
    }
}
