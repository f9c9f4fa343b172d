package io.github.rebalancelab.oldzk;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.KafkaStream;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.ConsoleAppender;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;
import org.apache.log4j.spi.LoggingEvent;

/**
 * The real Kafka 0.8.2.2 high-level consumer (ZookeeperConsumerConnector) for the lab: N streams for one
 * topic, each on its own thread, every message delivered printed as a JSON line on stdout.
 *
 * <pre>
 * java -cp 'interop/kafka-0.8.2/target/lib/*' io.github.rebalancelab.oldzk.OldConsumer \
 *   --zookeeper HOST:PORT --group G --topic T [--streams N] [--consumer-id ID] [--config k=v ...]
 * </pre>
 *
 * Output, one JSON object per line, each with "event" and "ts" (ms since the epoch):
 * started {consumer_id, streams}; delivered {stream, topic, partition, offset, key, value (UTF-8 text, null
 * when the message is over 256 bytes)}; the connector's rebalance
 * as its own log lines tell it (0.8.2.2 has no ConsumerRebalanceListener; it came in 0.9):
 * rebalance_begin {attempt}, rebalance_end {attempt}, rebalance_failed {attempt}, owned {thread, topic,
 * partition}, claim_conflict {attempt, partition} (an owner znode held by another thread: the attempt fails),
 * selected {partitions}; log {level, message} (its WARN and ERROR lines); error {message}; stopped. Stdin: "stop" (or its end) shuts the
 * connector down (it commits its offsets when auto-commit is on) and exits 0.
 */
public final class OldConsumer {
    private static final PrintStream OUT =
            new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    static synchronized void emit(String event, String... kv) {
        StringBuilder b = new StringBuilder(96);
        b.append("{\"event\":").append(quote(event)).append(",\"ts\":").append(System.currentTimeMillis());
        for (int i = 0; i + 1 < kv.length; i += 2) {
            b.append(',').append(quote(kv[i])).append(':');
            String v = kv[i + 1];
            if (v != null && v.startsWith("#")) {
                b.append(v.substring(1)); // a number or raw JSON
            } else {
                b.append(quote(v));
            }
        }
        b.append('}');
        OUT.println(b);
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /** Turns the connector's INFO lines about its rebalance into events (the messages of 0.8.2.2's source). */
    static final class RebalanceAppender extends AppenderSkeleton {
        private static final Pattern BEGIN = Pattern.compile("begin rebalancing consumer (\\S+) try #(\\d+)");
        private static final Pattern END = Pattern.compile("end rebalancing consumer (\\S+) try #(\\d+)");
        private static final Pattern OWNED = Pattern.compile("(\\S+) successfully owned partition (\\d+) for topic (\\S+)");
        private static final Pattern SELECTED = Pattern.compile("selected partitions : (.*)$");
        private static final Pattern CONFLICT = Pattern.compile("waiting for the partition ownership to be deleted: (\\d+)");
        private int attempt;

        @Override
        protected synchronized void append(LoggingEvent e) {
            String m = String.valueOf(e.getMessage());
            Matcher x;
            if ((x = BEGIN.matcher(m)).find()) {
                attempt = Integer.parseInt(x.group(2));
                emit("rebalance_begin", "attempt", "#" + attempt);
            } else if ((x = END.matcher(m)).find()) {
                emit("rebalance_end", "attempt", "#" + x.group(2));
            } else if ((x = OWNED.matcher(m)).find()) {
                emit("owned", "thread", x.group(1), "topic", x.group(3), "partition", "#" + x.group(2));
            } else if ((x = CONFLICT.matcher(m)).find()) {
                emit("claim_conflict", "attempt", "#" + attempt, "partition", "#" + x.group(1));
            } else if ((x = SELECTED.matcher(m)).find()) {
                emit("selected", "partitions", x.group(1));
            } else if (m.contains("Rebalancing attempt failed") || m.contains("exception during rebalance")) {
                emit("rebalance_failed", "attempt", "#" + attempt, "message", m);
            } else if (e.getLevel().isGreaterOrEqual(Level.WARN)) {
                emit("log", "level", e.getLevel().toString(), "message", m);
            }
        }

        @Override
        public void close() {}

        @Override
        public boolean requiresLayout() {
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        String zk = null, group = null, topic = null, consumerId = null;
        int streams = 1;
        Properties props = new Properties();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--zookeeper": zk = v; i++; break;
                case "--group": group = v; i++; break;
                case "--topic": topic = v; i++; break;
                case "--streams": streams = Integer.parseInt(v); i++; break;
                case "--consumer-id": consumerId = v; i++; break;
                case "--config": {
                    int eq = v.indexOf('=');
                    props.setProperty(v.substring(0, eq), v.substring(eq + 1));
                    i++;
                    break;
                }
                default:
                    System.err.println("OldConsumer: unknown argument " + a);
                    System.exit(2);
            }
        }
        if (zk == null || group == null || topic == null) {
            System.err.println("usage: OldConsumer --zookeeper HOST:PORT --group G --topic T [--streams N] [--consumer-id ID] [--config k=v]...");
            System.exit(2);
        }

        // Logs: WARN and above to stderr; the connector's own INFO lines feed the rebalance events.
        Logger root = Logger.getRootLogger();
        root.removeAllAppenders();
        root.setLevel(Level.WARN);
        ConsoleAppender console = new ConsoleAppender(new PatternLayout("[%d] %p %m (%c)%n"), ConsoleAppender.SYSTEM_ERR);
        root.addAppender(console);
        Logger zcc = Logger.getLogger("kafka.consumer.ZookeeperConsumerConnector");
        zcc.setLevel(Level.INFO);
        zcc.addAppender(new RebalanceAppender());
        zcc.setAdditivity(false);

        props.setProperty("zookeeper.connect", zk);
        props.setProperty("group.id", group);
        if (consumerId != null) {
            props.setProperty("consumer.id", consumerId);
        }
        props.putIfAbsent("auto.offset.reset", "smallest");

        ConsumerConnector connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(props));
        String idString = group + "_" + (consumerId != null ? consumerId : "?");
        try {
            java.lang.reflect.Method m = connector.getClass().getDeclaredField("underlying").getType().getMethod("consumerIdString");
            java.lang.reflect.Field f = connector.getClass().getDeclaredField("underlying");
            f.setAccessible(true);
            idString = (String) m.invoke(f.get(connector));
        } catch (ReflectiveOperationException | RuntimeException ignored) {
            // the id from the config is the same when consumer.id is set
        }
        Map<String, List<KafkaStream<byte[], byte[]>>> byTopic =
                connector.createMessageStreams(Collections.singletonMap(topic, streams));
        emit("started", "consumer_id", idString, "streams", "#" + streams, "topic", topic, "group", group,
                "java", System.getProperty("java.version"));

        List<Thread> threads = new ArrayList<>();
        List<KafkaStream<byte[], byte[]>> list = byTopic.get(topic);
        for (int s = 0; s < list.size(); s++) {
            final int stream = s;
            final KafkaStream<byte[], byte[]> ks = list.get(s);
            Thread t = new Thread(() -> {
                try {
                    ConsumerIterator<byte[], byte[]> it = ks.iterator();
                    while (it.hasNext()) {
                        MessageAndMetadata<byte[], byte[]> mm = it.next();
                        // key and value (as UTF-8 text) only for a message of at most 256 bytes, to keep
                        // the event small in runs of large messages
                        byte[] key = mm.key(), value = mm.message();
                        boolean small = value == null || value.length + (key == null ? 0 : key.length) <= 256;
                        emit("delivered", "stream", "#" + stream, "topic", mm.topic(), "partition", "#" + mm.partition(),
                                "offset", "#" + mm.offset(),
                                "key", small ? "#" + quote(key == null ? null : new String(key, StandardCharsets.UTF_8)) : "#null",
                                "value", small ? "#" + quote(value == null ? null : new String(value, StandardCharsets.UTF_8)) : "#null");
                    }
                } catch (Throwable e) {
                    emit("error", "stream", "#" + stream, "message", String.valueOf(e));
                }
            }, "stream-" + s);
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("stop")) {
                break;
            }
        }
        connector.shutdown();
        for (Thread t : threads) {
            t.join(10_000);
        }
        emit("stopped", "consumer_id", idString);
        System.exit(0);
    }
}
