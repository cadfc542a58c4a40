import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Jepsen workloads' long-lived Java clients (benchmarks/jepsen, kafka-clients 4.x only:
 * reached from Client.java by name). Job `jepsen_workers` runs one thread per entry of
 * `workers` until SIGTERM, each printing its operations as lines `{"process": p, "type":
 * "invoke"|"ok"|"fail"|"info"|"record", "f": f, "value": v}`, which the Python side records
 * in its history as the confluent-kafka workers record theirs:
 *
 * <ul>
 *   <li>`queue-consumer`: a group member (`protocol` classic or consumer, read_committed) of
 *       `queue_topic` that polls, and commits after each poll that returned records;
 *   <li>`txn`: read-write transactions over `txn_topic`: poll a read_committed consumer
 *       assigned every partition, then append 1 to 3 values to random partitions and commit,
 *       the write-and-commit phase serialised between the job's txn workers;
 *   <li>`share`: a share consumer (explicit mode) that accepts every record and commits; a
 *       record whose partition's commit succeeded is a `share-ack` record.
 * </ul>
 */
public final class JepsenWorkers {
  private static final Object WRITE_LOCK = new Object();
  // Bounds on stopping: each client's close, and all the workers' (within the 30 s a SIGTERM
  // gives the job to print its result: Client.stopOnSigterm).
  private static final Duration CLOSE = Duration.ofSeconds(5);
  private static final long STOP_MS = 20_000;

  private final JsonNode job;
  private final ObjectMapper json;
  private final Consumer<ObjectNode> emit;
  private final BooleanSupplier stopping;
  private final Duration timeout;

  private JepsenWorkers(
      JsonNode job, ObjectMapper json, Consumer<ObjectNode> emit, BooleanSupplier stopping) {
    this.job = job;
    this.json = json;
    this.emit = emit;
    this.stopping = stopping;
    this.timeout = Duration.ofMillis(job.get("timeout_ms").asLong());
  }

  /** Runs every worker until `stopping`; the result names the workers that crashed. */
  public static ObjectNode run(
      JsonNode job, ObjectMapper json, Consumer<ObjectNode> emit, BooleanSupplier stopping)
      throws InterruptedException {
    JepsenWorkers workers = new JepsenWorkers(job, json, emit, stopping);
    List<String> crashed = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    for (JsonNode spec : job.get("workers")) {
      String name = spec.get("role").asText() + "-" + spec.get("process").asInt();
      Thread thread = new Thread(() -> workers.runWorker(spec, crashed), name);
      thread.setDaemon(true);
      thread.start();
      threads.add(thread);
    }
    while (!stopping.getAsBoolean()) {
      Thread.sleep(50);
    }
    long deadline = System.currentTimeMillis() + STOP_MS;
    for (Thread thread : threads) {
      thread.join(Math.max(1, deadline - System.currentTimeMillis()));
      if (thread.isAlive()) {
        List<StackTraceElement> stack = List.of(thread.getStackTrace());
        crashed.add(
            thread.getName() + " did not stop within " + STOP_MS + " ms, at "
                + stack.subList(0, Math.min(12, stack.size())));
      }
    }
    ObjectNode result = json.createObjectNode().put("ok", crashed.isEmpty());
    if (!crashed.isEmpty()) {
      result.put("error", String.join("; ", crashed));
    }
    return result;
  }

  private void runWorker(JsonNode spec, List<String> crashed) {
    int process = spec.get("process").asInt();
    try {
      switch (spec.get("role").asText()) {
        case "queue-consumer" -> queueConsumer(process, spec.get("protocol").asText(), spec);
        case "txn" -> transactions(process, new Random(spec.get("seed").asLong()));
        case "share" -> shareConsumer(process, spec.get("group").asText());
        default -> throw new IllegalArgumentException("unknown role " + spec.get("role"));
      }
    } catch (Exception | Error e) {
      e.printStackTrace();
      crashed.add(process + ": " + e);
    }
  }

  private void line(int process, String type, String f, Object value) {
    ObjectNode line = json.createObjectNode().put("process", process).put("type", type);
    line.put("f", f).set("value", json.valueToTree(value));
    emit.accept(line);
  }

  private Properties consumerProps(String group) {
    Properties props = new Properties();
    props.put("bootstrap.servers", job.get("bootstrap").asText());
    props.put("group.id", group);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    return props;
  }

  private static String text(byte[] value) {
    return new String(value, StandardCharsets.UTF_8);
  }

  private static String key(String topic, int partition) {
    return topic + "/" + partition;
  }

  /** {key: [[offset, value], ...]}, as the Python workers record a poll. */
  private ObjectNode reads(ConsumerRecords<byte[], byte[]> records) {
    ObjectNode reads = json.createObjectNode();
    for (ConsumerRecord<byte[], byte[]> record : records) {
      String key = key(record.topic(), record.partition());
      ArrayNode read = reads.has(key) ? (ArrayNode) reads.get(key) : reads.putArray(key);
      read.addArray().add(record.offset()).add(text(record.value()));
    }
    return reads;
  }

  // --- queue consumers ---

  private void queueConsumer(int process, String protocol, JsonNode spec) {
    Properties props = consumerProps(spec.get("group").asText());
    props.put("group.protocol", protocol);
    props.put("auto.offset.reset", "earliest");
    props.put("enable.auto.commit", "false");
    props.put("isolation.level", "read_committed");
    if (protocol.equals("classic")) {
      props.put("session.timeout.ms", "6000");
    }
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
    try {
      consumer.subscribe(List.of(job.get("queue_topic").asText()));
      while (!stopping.getAsBoolean()) {
        line(process, "invoke", "poll", List.of(List.of("poll")));
        ConsumerRecords<byte[], byte[]> records;
        try {
          records = consumer.poll(Duration.ofMillis(200));
        } catch (KafkaException e) {
          line(process, "fail", "poll", List.of(List.of("poll")));
          continue;
        }
        line(process, "ok", "poll", List.of(List.of("poll", reads(records))));
        if (!records.isEmpty()) {
          try {
            consumer.commitSync(timeout);
          } catch (KafkaException e) {
            // refused under faults (a rebalance, a moved coordinator): the next one covers it
          }
        }
      }
    } finally {
      consumer.close(CloseOptions.timeout(CLOSE));
    }
  }

  // --- read-write transactions ---

  private KafkaProducer<byte[], byte[]> transactionalProducer(int process) {
    Properties props = new Properties();
    props.put("bootstrap.servers", job.get("bootstrap").asText());
    props.put("transactional.id", "jepsen-wr-java-" + process);
    props.put("transaction.timeout.ms", job.get("txn_timeout_ms").asText());
    props.put("linger.ms", "0");
    props.put("request.timeout.ms", String.valueOf(timeout.toMillis() - 1000));
    props.put("delivery.timeout.ms", String.valueOf(timeout.toMillis()));
    props.put("max.block.ms", String.valueOf(timeout.toMillis()));
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    return new KafkaProducer<>(props);
  }

  /** An initialised transactional producer, or null when the cluster refused for now. */
  private KafkaProducer<byte[], byte[]> initialised(int process) throws InterruptedException {
    KafkaProducer<byte[], byte[]> producer = transactionalProducer(process);
    try {
      producer.initTransactions();
      return producer;
    } catch (KafkaException e) {
      producer.close(Duration.ZERO);
      Thread.sleep(500);
      return null;
    }
  }

  private void transactions(int process, Random random) throws InterruptedException {
    String topic = job.get("txn_topic").asText();
    int partitions = job.get("partitions").asInt();
    Properties props = consumerProps("jepsen-wr-reader-java-" + process);
    props.put("isolation.level", "read_committed");
    props.put("enable.auto.commit", "false");
    List<TopicPartition> all = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      all.add(new TopicPartition(topic, p));
    }
    KafkaProducer<byte[], byte[]> producer = null;
    int count = 0;
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
    try {
      consumer.assign(all);
      consumer.seekToBeginning(all);
      while (!stopping.getAsBoolean()) {
        synchronized (WRITE_LOCK) {
          if (producer == null) {
            producer = initialised(process);
          }
        }
        if (producer == null) {
          continue;
        }
        List<Integer> shuffled = new ArrayList<>(all.size());
        all.forEach(tp -> shuffled.add(tp.partition()));
        Collections.shuffle(shuffled, random);
        List<Object[]> sends = new ArrayList<>();
        for (int partition : shuffled.subList(0, 1 + random.nextInt(Math.min(3, partitions)))) {
          sends.add(new Object[] {partition, "p" + process + "-" + ++count});
        }
        if (!transaction(process, topic, producer, consumer, sends)) {
          producer.close(Duration.ZERO);
          producer = null;
        }
      }
    } finally {
      consumer.close(CloseOptions.timeout(CLOSE));
      if (producer != null) {
        producer.close(Duration.ZERO);
      }
    }
  }

  /** One transaction (sends: [partition, value]); false when the producer must be made again. */
  private boolean transaction(
      int process,
      String topic,
      KafkaProducer<byte[], byte[]> producer,
      KafkaConsumer<byte[], byte[]> consumer,
      List<Object[]> sends) {
    List<List<Object>> attempted = new ArrayList<>();
    attempted.add(List.of("poll"));
    sends.forEach(s -> attempted.add(List.of("send", key(topic, (int) s[0]), s[1])));
    line(process, "invoke", "txn", attempted);
    ObjectNode reads;
    try {
      reads = reads(consumer.poll(Duration.ofMillis(100)));
    } catch (KafkaException e) {
      line(process, "fail", "txn", attempted);
      return true;
    }
    attempted.set(0, List.of("poll", reads));
    synchronized (WRITE_LOCK) {
      List<Future<RecordMetadata>> delivered = new ArrayList<>();
      try {
        producer.beginTransaction();
        for (Object[] send : sends) {
          byte[] value = ((String) send[1]).getBytes(StandardCharsets.UTF_8);
          delivered.add(producer.send(new ProducerRecord<>(topic, (int) send[0], null, value)));
        }
        producer.flush();
        List<Object> done = new ArrayList<>();
        done.add(List.of("poll", reads));
        for (int i = 0; i < sends.size(); i++) {
          long offset = delivered.get(i).get().offset();
          done.add(List.of("send", key(topic, (int) sends.get(i)[0]), List.of(offset, sends.get(i)[1])));
        }
        try {
          producer.commitTransaction();
        } catch (KafkaException e) {
          line(process, "info", "txn", attempted); // the commit may have happened
          return false;
        }
        line(process, "ok", "txn", done);
        return true;
      } catch (Exception e) {
        return abort(process, producer, attempted);
      }
    }
  }

  private boolean abort(
      int process, KafkaProducer<byte[], byte[]> producer, List<List<Object>> attempted) {
    try {
      producer.abortTransaction();
    } catch (KafkaException e) {
      line(process, "info", "txn", attempted);
      return false;
    }
    line(process, "fail", "txn", attempted);
    return true;
  }

  // --- share consumers ---

  private void shareConsumer(int process, String group) throws InterruptedException {
    Properties props = consumerProps(group);
    props.put("share.acknowledgement.mode", "explicit");
    KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props);
    try {
      consumer.subscribe(List.of(job.get("queue_topic").asText()));
      while (!stopping.getAsBoolean()) {
        pollAcceptCommit(process, group, consumer);
      }
    } finally {
      consumer.close(CLOSE);
    }
  }

  private void pollAcceptCommit(
      int process, String group, KafkaShareConsumer<byte[], byte[]> consumer)
      throws InterruptedException {
    List<ConsumerRecord<byte[], byte[]>> accepted = new ArrayList<>();
    Map<TopicIdPartition, Optional<KafkaException>> results;
    try {
      for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
        accepted.add(record);
      }
      if (accepted.isEmpty()) {
        return;
      }
      results = consumer.commitSync(timeout);
    } catch (KafkaException | IllegalStateException e) {
      Thread.sleep(100); // unknown outcome: nothing recorded as accepted
      return;
    }
    for (ConsumerRecord<byte[], byte[]> record : accepted) {
      boolean committed =
          results.entrySet().stream()
              .anyMatch(
                  e ->
                      e.getKey().topic().equals(record.topic())
                          && e.getKey().partition() == record.partition()
                          && e.getValue().isEmpty());
      if (committed) {
        ObjectNode value = json.createObjectNode().put("group", group);
        value.put("key", key(record.topic(), record.partition())).put("offset", record.offset());
        line(process, "record", "share-ack", value.put("value", text(record.value())));
      }
    }
  }
}
