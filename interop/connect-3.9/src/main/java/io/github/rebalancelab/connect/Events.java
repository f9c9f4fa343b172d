package io.github.rebalancelab.connect;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * One task's event log: a JSON object per line appended to {@code <events.dir>/<connector>-<task>.jsonl},
 * each written unbuffered (a worker killed with -9 loses nothing it wrote). Every line has "event",
 * "worker" (the JVM's {@code -Drebalancelab.worker}), "connector", "task" and "ms" (wall clock) and
 * then the caller's fields. Kafka's VerifiableSourceTask/VerifiableSinkTask print the same kind of
 * objects to stdout; a file per task keeps them apart from the worker's log.
 */
final class Events implements AutoCloseable {
    static final String DIR_CONFIG = "events.dir";

    private final FileOutputStream out;
    private final String head;

    Events(String dir, String connector, int task) {
        try {
            out = new FileOutputStream(Path.of(dir, connector + "-" + task + ".jsonl").toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        head = "\"worker\":\"" + System.getProperty("rebalancelab.worker", "") + "\",\"connector\":\"" + connector
            + "\",\"task\":" + task;
    }

    /** Writes {"event":event, worker, connector, task, ms, fields...}; fields are pre-rendered "k":v pairs. */
    synchronized void write(String event, String fields) {
        String line = "{\"event\":\"" + event + "\"," + head + ",\"ms\":" + System.currentTimeMillis()
            + (fields.isEmpty() ? "" : "," + fields) + "}\n";
        try {
            out.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public synchronized void close() {
        try {
            out.close();
        } catch (IOException ignored) {
            // the stop line is written; nothing to do
        }
    }
}
