// Java kafka-clients job program (compiled against 4.3.0 and 3.9.0; uses only APIs both have).
// java -cp classes:lib/* Client '<job json>'  (or the job on stdin); see ../README.md.
// JobServer.java runs the same jobs, many in one JVM (runJob).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeleteAclsResult;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.FencedMemberEpochException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.StaleMemberEpochException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Client {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long DEFAULT_TIMEOUT_MS = 30_000;
  // stdout carries only the protocol's lines; the clients' own logging goes to stderr.
  private static PrintStream resultStream;
  // Counted down once the result line is out: a SIGTERM shutdown hook waits for it.
  private static final CountDownLatch RESULT_PRINTED = new CountDownLatch(1);
  // Set by JobServer: the JVM is shared, so a job may neither halt it nor print on stdout.
  private static volatile boolean sharedJvm;
  // The client ids Kafka would generate, counted per job as in a JVM of its own (one per
  // job thread): Kafka's own sequences are per JVM, and tests see client ids.
  private static final ThreadLocal<Map<String, Integer>> CLIENT_ID_SEQUENCES =
      ThreadLocal.withInitial(HashMap::new);

  public static void main(String[] args) throws Exception {
    resultStream = System.out;
    System.setOut(System.err);
    String text =
        args.length > 0 ? args[0] : new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
    ObjectNode result = runJob(JSON.readTree(text));
    resultStream.println(JSON.writeValueAsString(result));
    resultStream.flush();
    RESULT_PRINTED.countDown();
    System.exit(0); // don't wait for the clients' background threads
  }

  /** The job's result: `ok` false with the client's error if it failed. */
  static ObjectNode runJob(JsonNode job) {
    try {
      return run(job);
    } catch (Exception e) {
      return failure(e);
    }
  }

  static void shareJvm() {
    sharedJvm = true;
  }

  /** Jobs that crash on purpose or print event lines need a JVM of their own (runner.py). */
  private static void requireOwnJvm(String what) {
    if (sharedJvm) {
      throw new IllegalStateException(what + " needs a JVM of its own, not the job server");
    }
  }

  private static ObjectNode run(JsonNode job) throws Exception {
    switch (job.get("op").asText()) {
      case "produce":
        return produce(job);
      case "produce_paced":
        return producePaced(job);
      case "consume":
        return consume(job);
      case "metadata":
        return metadata(job);
      case "create_topics":
        return createTopics(job);
      case "delete_topics":
        return deleteTopics(job);
      case "create_partitions":
        return createPartitions(job);
      case "describe_configs":
        return describeConfigs(job);
      case "alter_configs":
        return alterConfigs(job);
      case "list_offsets":
        return listOffsets(job);
      case "delete_records":
        return deleteRecords(job);
      case "elect_leaders":
        return electLeaders(job);
      case "alter_reassignments":
        return alterReassignments(job);
      case "list_reassignments":
        return listReassignments(job);
      case "transform":
        return transform(job);
      case "fence":
        return fence(job);
      case "group_member":
        return groupMember(job);
      case "list_groups":
        return listGroups(job);
      case "describe_groups":
        return describeGroups(job);
      case "delete_groups":
        return deleteGroups(job);
      case "list_group_offsets":
        return listGroupOffsets(job);
      case "alter_group_offsets":
        return alterGroupOffsets(job);
      case "delete_group_offsets":
        return deleteGroupOffsets(job);
      case "describe_topics":
        return describeTopics(job);
      case "describe_quorum":
        return describeQuorum(job);
      case "list_transactions":
        return listTransactions(job);
      case "commit_offsets":
        return commitOffsets(job);
      case "share_consume":
        return shareConsume(job);
      case "jepsen_workers":
        return jepsenWorkers(job);
      case "list_share_groups":
      case "describe_share_groups":
      case "list_share_group_offsets":
      case "alter_share_group_offsets":
      case "delete_share_group_offsets":
        return shareAdmin(job);
      case "create_delegation_token":
      case "renew_delegation_token":
      case "expire_delegation_token":
      case "describe_delegation_token":
        return tokenAdmin(job);
      case "list_streams_groups":
      case "describe_streams_groups":
      case "delete_streams_groups":
        return streamsAdmin(job);
      case "list_config_resources":
        return listConfigResources(job);
      case "create_acls":
        return createAcls(job);
      case "describe_acls":
        return describeAcls(job);
      case "delete_acls":
        return deleteAcls(job);
      case "describe_producers":
      case "abort_transaction":
      case "abort_hanging":
      case "unregister_broker":
      case "describe_cluster_nodes":
      case "add_raft_voter":
      case "remove_raft_voter":
      case "describe_quorum_voters":
      case "describe_topics_elr":
        return clusterAdmin(job);
      default:
        ObjectNode unsupported = JSON.createObjectNode().put("ok", false);
        unsupported.put("error", "unsupported op '" + job.get("op").asText() + "'");
        return unsupported.put("error_name", "UNSUPPORTED_OP");
    }
  }

  // --- the protocol's pieces ---

  private static long timeoutMs(JsonNode job) {
    return job.path("timeout_ms").asLong(DEFAULT_TIMEOUT_MS);
  }

  private static byte[] bytes(JsonNode node) {
    return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
  }

  private static String b64(byte[] data) {
    return data == null ? null : Base64.getEncoder().encodeToString(data);
  }

  private static Integer optionalInt(JsonNode node) {
    return node == null || node.isNull() ? null : node.asInt();
  }

  private static Properties properties(JsonNode job) {
    Properties props = new Properties();
    props.put("bootstrap.servers", job.get("bootstrap").asText());
    return props;
  }

  private static void addConfig(Properties props, JsonNode job) {
    job.path("config").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
  }

  private static int nextClientSequence(String kind) {
    return CLIENT_ID_SEQUENCES.get().merge(kind, 1, Integer::sum);
  }

  /**
   * `props` with the client.id Kafka generates when none is set (ProducerConfig,
   * ConsumerConfig, KafkaAdminClient), from this job's sequences: `kind` is producer, consumer
   * (also share consumers) or admin.
   */
  static Properties withClientId(Properties props, String kind) {
    if (!props.getProperty("client.id", "").isEmpty()) {
      return props;
    }
    String generated =
        switch (kind) {
          case "producer" -> "producer-"
              + (props.containsKey("transactional.id")
                  ? props.getProperty("transactional.id")
                  : String.valueOf(nextClientSequence(kind)));
          case "consumer" -> "consumer-"
              + props.getProperty("group.id")
              + "-"
              + (props.containsKey("group.instance.id")
                  ? props.getProperty("group.instance.id")
                  : String.valueOf(nextClientSequence(kind)));
          default -> "adminclient-" + nextClientSequence(kind);
        };
    props.put("client.id", generated);
    return props;
  }

  private static KafkaProducer<byte[], byte[]> producer(Properties props) {
    return new KafkaProducer<>(withClientId(props, "producer"));
  }

  private static KafkaConsumer<byte[], byte[]> consumer(Properties props) {
    return new KafkaConsumer<>(withClientId(props, "consumer"));
  }

  private static Throwable cause(Throwable e) {
    return e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
  }

  static ObjectNode failure(Throwable e) {
    Throwable cause = cause(e);
    StringWriter trace = new StringWriter();
    cause.printStackTrace(new PrintWriter(trace));
    ObjectNode result = JSON.createObjectNode().put("ok", false);
    result.put("error", cause.getClass().getName() + ": " + cause.getMessage());
    result.put("error_name", Errors.forException(cause).name());
    return result.put("traceback", trace.toString());
  }

  /** An item's outcome: `error` and `error_name` are null when its future succeeded. */
  private static <T> T outcome(ObjectNode item, KafkaFuture<T> future) throws InterruptedException {
    try {
      T value = future.get();
      putError(item, null);
      return value;
    } catch (ExecutionException e) {
      putError(item, cause(e));
      return null;
    }
  }

  /** `error` and `error_name` of an item: null when `error` is null. */
  private static ObjectNode putError(ObjectNode item, Throwable error) {
    if (error == null) {
      return item.putNull("error").putNull("error_name");
    }
    item.put("error", error.getClass().getName() + ": " + error.getMessage());
    return item.put("error_name", Errors.forException(error).name());
  }

  // --- produce and consume ---

  private static ObjectNode produce(JsonNode job) throws Exception {
    Properties props = producerProperties(job);
    addTransactionalConfig(props, job);
    addConfig(props, job);
    String topic = job.get("topic").asText();
    List<Future<RecordMetadata>> futures = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = producer(props)) {
      if (job.hasNonNull("transactional_id")) {
        producer.initTransactions();
        producer.beginTransaction();
      }
      for (JsonNode record : job.get("records")) {
        futures.add(producer.send(producerRecord(topic, record)));
      }
      producer.flush();
      ObjectNode result = acknowledged(job, futures, producer);
      endTransaction(producer, job, result);
      return result;
    }
  }

  /** A producer's settings from a produce job (before `config`, which may override them). */
  private static Properties producerProperties(JsonNode job) {
    Properties props = properties(job);
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    props.put("acks", job.path("acks").asText("all"));
    props.put("compression.type", job.path("compression").asText("none"));
    long requestTimeoutMs = Math.min(timeoutMs(job), 30_000);
    props.put("request.timeout.ms", String.valueOf(requestTimeoutMs));
    props.put("linger.ms", "5");
    // Kafka requires delivery.timeout.ms >= linger.ms + request.timeout.ms.
    props.put("delivery.timeout.ms", String.valueOf(Math.max(timeoutMs(job), requestTimeoutMs + 5)));
    if (job.hasNonNull("idempotent")) {
      props.put("enable.idempotence", job.get("idempotent").asText());
    }
    return props;
  }

  private static ProducerRecord<byte[], byte[]> producerRecord(String topic, JsonNode record) {
    List<Header> headers = new ArrayList<>();
    for (JsonNode header : record.path("headers")) {
      headers.add(new RecordHeader(header.get(0).asText(), bytes(header.get(1))));
    }
    Long timestamp = record.hasNonNull("timestamp") ? record.get("timestamp").asLong() : null;
    return new ProducerRecord<>(
        topic,
        optionalInt(record.get("partition")),
        timestamp,
        bytes(record.get("key")),
        bytes(record.get("value")),
        headers);
  }

  /** The produce result: each record's acknowledgement, and the producer's throttle time. */
  private static ObjectNode acknowledged(
      JsonNode job, List<Future<RecordMetadata>> futures, KafkaProducer<byte[], byte[]> producer)
      throws Exception {
    ArrayNode results = JSON.createArrayNode();
    for (Future<RecordMetadata> future : futures) {
      RecordMetadata sent = future.get(timeoutMs(job), TimeUnit.MILLISECONDS);
      results
          .addObject()
          .put("partition", sent.partition())
          .put("offset", sent.offset())
          .put("timestamp", sent.timestamp());
    }
    ObjectNode result = JSON.createObjectNode().put("ok", true);
    result.set("results", results);
    return putThrottleTime(result, producer);
  }

  /**
   * `throttle_time_ms_max`: the producer-metrics `produce-throttle-time-max` (the largest
   * throttle_time_ms of the Produce answers in the metrics window), null while it has none.
   */
  private static ObjectNode putThrottleTime(ObjectNode result, KafkaProducer<?, ?> producer) {
    result.putNull("throttle_time_ms_max");
    producer.metrics().forEach(
        (name, metric) -> {
          if (name.group().equals("producer-metrics")
              && name.name().equals("produce-throttle-time-max")
              && metric.metricValue() instanceof Double max
              && Double.isFinite(max)) {
            result.put("throttle_time_ms_max", max);
          }
        });
    return result;
  }

  // --- transactions ---

  private static void addTransactionalConfig(Properties props, JsonNode job) {
    if (job.hasNonNull("transactional_id")) {
      props.put("transactional.id", job.get("transactional_id").asText());
    }
    if (job.hasNonNull("transaction_timeout_ms")) {
      props.put("transaction.timeout.ms", job.get("transaction_timeout_ms").asText());
    }
  }

  /** Commit, abort, or ("open") crash with the transaction left open. */
  private static void endTransaction(
      KafkaProducer<byte[], byte[]> producer, JsonNode job, ObjectNode result) {
    if (!job.hasNonNull("transactional_id")) {
      return;
    }
    String ending = job.path("transaction").asText("commit");
    if (ending.equals("commit")) {
      producer.commitTransaction();
    } else if (ending.equals("abort")) {
      producer.abortTransaction();
    } else if (ending.equals("open")) {
      crash(result);
    } else {
      throw new IllegalArgumentException("unknown transaction ending " + ending);
    }
  }

  /** Print the result and stop at once, closing nothing (a closing producer would abort). */
  private static void crash(ObjectNode result) {
    requireOwnJvm("a crash (an open transaction, crash_after)");
    try {
      resultStream.println(JSON.writeValueAsString(result));
    } catch (Exception e) {
      resultStream.println("{\"ok\": false, \"error\": \"cannot write the result\"}");
    }
    resultStream.flush();
    Runtime.getRuntime().halt(0);
  }

  /** Consume-transform-produce exactly once (README.md, `transform`). */
  private static ObjectNode transform(JsonNode job) throws Exception {
    int batch = job.path("batch").asInt(10);
    Properties consumerProps = properties(job);
    consumerProps.put("key.deserializer", ByteArrayDeserializer.class.getName());
    consumerProps.put("value.deserializer", ByteArrayDeserializer.class.getName());
    consumerProps.put("group.id", job.get("group").asText());
    consumerProps.put("enable.auto.commit", "false");
    consumerProps.put("auto.offset.reset", "earliest");
    consumerProps.put("isolation.level", "read_committed");
    consumerProps.put("max.poll.records", String.valueOf(batch));
    if (job.path("group_protocol").asText("classic").equals("consumer")) {
      consumerProps.put("group.protocol", "consumer"); // the broker's session timeout
    } else {
      consumerProps.put("session.timeout.ms", "6000");
    }
    if (job.hasNonNull("instance_id")) {
      consumerProps.put("group.instance.id", job.get("instance_id").asText());
    }
    Properties producerProps = properties(job);
    producerProps.put("key.serializer", ByteArraySerializer.class.getName());
    producerProps.put("value.serializer", ByteArraySerializer.class.getName());
    addTransactionalConfig(producerProps, job);
    String output = job.get("output").asText();
    int count = job.get("count").asInt();
    int crashAfter = job.path("crash_after").asInt(-1);
    long deadline = System.currentTimeMillis() + timeoutMs(job);
    int processed = 0;
    int committed = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(consumerProps);
        KafkaProducer<byte[], byte[]> producer = producer(producerProps)) {
      producer.initTransactions();
      consumer.subscribe(List.of(job.get("input").asText()));
      while (committed < count && System.currentTimeMillis() < deadline) {
        long wait = Math.max(0, Math.min(500, deadline - System.currentTimeMillis()));
        ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(wait));
        if (polled.isEmpty()) {
          continue;
        }
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : polled) {
          String source = record.partition() + ":" + record.offset();
          List<Header> headers =
              List.of(new RecordHeader("source", source.getBytes(StandardCharsets.UTF_8)));
          producer.send(
              new ProducerRecord<>(
                  output, record.partition(), record.key(), record.value(), headers));
          offsets.put(
              new TopicPartition(record.topic(), record.partition()),
              new OffsetAndMetadata(record.offset() + 1));
          processed += 1;
          if (processed == crashAfter) {
            producer.flush();
            crash(transformResult(processed, committed).put("crashed", true));
          }
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        producer.commitTransaction();
        committed += polled.count();
      }
    }
    return transformResult(processed, committed).put("crashed", false);
  }

  /** Two producers with one transactional id: the newer one commits, the older is fenced. */
  private static ObjectNode fence(JsonNode job) throws Exception {
    Properties props = properties(job);
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    addTransactionalConfig(props, job);
    String topic = job.get("topic").asText();
    ObjectNode result = JSON.createObjectNode().put("ok", true);
    try (KafkaProducer<byte[], byte[]> older = producer(props);
        KafkaProducer<byte[], byte[]> newer = producer(props)) {
      older.initTransactions();
      older.beginTransaction();
      older.send(new ProducerRecord<>(topic, 0, null, "older".getBytes(StandardCharsets.UTF_8)));
      older.flush();
      newer.initTransactions();
      newer.beginTransaction();
      newer.send(new ProducerRecord<>(topic, 0, null, "newer".getBytes(StandardCharsets.UTF_8)));
      newer.commitTransaction();
      try {
        older.commitTransaction();
        result.putNull("older_error").putNull("older_error_name");
      } catch (Exception e) {
        Throwable thrown = cause(e);
        result.put("older_error", thrown.getClass().getSimpleName() + ": " + thrown.getMessage());
        result.put("older_error_name", Errors.forException(thrown).name());
      }
    }
    return result;
  }

  private static ObjectNode transformResult(int processed, int committed) {
    return JSON.createObjectNode()
        .put("ok", true)
        .put("processed", processed)
        .put("committed", committed);
  }

  // --- produce_paced: one record at a time, for a broker restart while a producer sends ---

  private static ObjectNode producePaced(JsonNode job) throws Exception {
    Properties props = producerProperties(job);
    addConfig(props, job);
    String topic = job.get("topic").asText();
    long intervalMs = job.path("interval_ms").asLong(50);
    List<Future<RecordMetadata>> futures = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = producer(props)) {
      for (JsonNode record : job.get("records")) {
        futures.add(producer.send(producerRecord(topic, record)));
        Thread.sleep(intervalMs);
      }
      producer.flush();
      return acknowledged(job, futures, producer);
    }
  }

  /** ShareClient.java is compiled only against kafka-clients 4.x: reached by name. */
  private static ObjectNode shareConsume(JsonNode job) throws Exception {
    Runnable holding = () -> {
      try {
        event(JSON.createObjectNode().put("event", "holding"));
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    };
    try {
      return (ObjectNode)
          Class.forName("ShareClient")
              .getMethod("shareConsume", JsonNode.class, ObjectMapper.class, Runnable.class)
              .invoke(null, job, JSON, holding);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** The streams-group admin jobs, in StreamsClient.java (kafka-clients 4.x only): by name. */
  private static ObjectNode streamsAdmin(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      return (ObjectNode)
          Class.forName("StreamsClient")
              .getMethod("streamsAdmin", JsonNode.class, Admin.class, ObjectMapper.class)
              .invoke(null, job, admin, JSON);
    }
  }

  /**
   * The Jepsen workloads' long-lived clients (JepsenWorkers.java, kafka-clients 4.x only: by
   * name): their operation lines are event lines, until SIGTERM stops them.
   */
  private static ObjectNode jepsenWorkers(JsonNode job) throws Exception {
    requireOwnJvm("jepsen_workers (stopped by SIGTERM)");
    AtomicBoolean stopping = stopOnSigterm();
    java.util.function.Consumer<ObjectNode> emit =
        line -> {
          try {
            event(line);
          } catch (Exception e) {
            throw new RuntimeException(e);
          }
        };
    java.util.function.BooleanSupplier stopped = stopping::get;
    try {
      return (ObjectNode)
          Class.forName("JepsenWorkers")
              .getMethod(
                  "run",
                  JsonNode.class,
                  ObjectMapper.class,
                  java.util.function.Consumer.class,
                  java.util.function.BooleanSupplier.class)
              .invoke(null, job, JSON, emit, stopped);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** The share-group admin jobs, in ShareClient.java (kafka-clients 4.x only): by name. */
  private static ObjectNode shareAdmin(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      return (ObjectNode)
          Class.forName("ShareClient")
              .getMethod("shareAdmin", JsonNode.class, Admin.class, ObjectMapper.class)
              .invoke(null, job, admin, JSON);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** The delegation-token admin jobs, in TokenClient.java: by name. */
  private static ObjectNode tokenAdmin(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      return (ObjectNode)
          Class.forName("TokenClient")
              .getMethod("tokenAdmin", JsonNode.class, Admin.class, ObjectMapper.class)
              .invoke(null, job, admin, JSON);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** Cluster administration jobs, in ClusterAdmin.java (kafka-clients 4.x only): by name. */
  private static ObjectNode clusterAdmin(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      return (ObjectNode)
          Class.forName("ClusterAdmin")
              .getMethod("run", JsonNode.class, Admin.class, ObjectMapper.class)
              .invoke(null, job, admin, JSON);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private static ObjectNode recordOut(ConsumerRecord<byte[], byte[]> record) {
    ObjectNode out = JSON.createObjectNode();
    out.put("partition", record.partition()).put("offset", record.offset());
    out.put("key", b64(record.key())).put("value", b64(record.value()));
    ArrayNode headers = out.putArray("headers");
    for (Header header : record.headers()) {
      headers.addArray().add(header.key()).add(b64(header.value()));
    }
    out.put("timestamp", record.timestamp());
    if (record.timestampType() == TimestampType.NO_TIMESTAMP_TYPE) {
      out.putNull("timestamp_type");
    } else {
      out.put("timestamp_type", record.timestampType().name);
    }
    return out;
  }

  private static List<TopicPartition> assignPartitions(
      KafkaConsumer<byte[], byte[]> consumer, JsonNode job) {
    String topic = job.get("topic").asText();
    List<TopicPartition> partitions = new ArrayList<>();
    if (job.hasNonNull("partitions")) {
      job.get("partitions").forEach(p -> partitions.add(new TopicPartition(topic, p.asInt())));
    } else {
      for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofMillis(timeoutMs(job)))) {
        partitions.add(new TopicPartition(topic, info.partition()));
      }
    }
    consumer.assign(partitions);
    String start = job.path("from").asText("earliest");
    if (start.equals("earliest")) {
      consumer.seekToBeginning(partitions);
    } else if (start.equals("latest")) {
      consumer.seekToEnd(partitions);
    } else {
      partitions.forEach(p -> consumer.seek(p, Long.parseLong(start)));
    }
    return partitions;
  }

  private static ObjectNode consume(JsonNode job) {
    Properties props = properties(job);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", job.path("from").asText().equals("latest") ? "latest" : "earliest");
    props.put("isolation.level", job.path("isolation").asText("read_uncommitted"));
    boolean grouped = job.hasNonNull("group");
    if (grouped) {
      props.put("group.id", job.get("group").asText());
    }
    addConfig(props, job);
    int count = job.get("count").asInt();
    long deadline = System.currentTimeMillis() + timeoutMs(job);
    ArrayNode records = JSON.createArrayNode();
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(props)) {
      if (grouped) {
        consumer.subscribe(List.of(job.get("topic").asText()));
      } else {
        assignPartitions(consumer, job);
      }
      while (records.size() < count && System.currentTimeMillis() < deadline) {
        long wait = Math.max(0, Math.min(500, deadline - System.currentTimeMillis()));
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(wait))) {
          if (records.size() < count) {
            records.add(recordOut(record));
          }
        }
      }
      if (grouped && records.size() > 0) {
        consumer.commitSync();
      }
    }
    ObjectNode result = JSON.createObjectNode().put("ok", true);
    result.set("records", records);
    return result.put("timed_out", records.size() < count);
  }

  // --- group_member: a long-running group consumer (../README.md) ---

  private static final Map<String, String> ASSIGNORS =
      Map.of(
          "range", "org.apache.kafka.clients.consumer.RangeAssignor",
          "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
          "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

  private static synchronized void event(ObjectNode line) throws Exception {
    requireOwnJvm("an event line (group_member, a holding share_consume)");
    resultStream.println(JSON.writeValueAsString(line));
    resultStream.flush();
  }

  private static void assigned(Set<TopicPartition> owned, boolean withTopics) {
    ObjectNode line = JSON.createObjectNode().put("event", "assigned");
    ArrayNode list = line.putArray("partitions");
    new TreeSet<>(owned.stream().map(TopicPartition::partition).toList()).forEach(list::add);
    if (withTopics) {
      ArrayNode pairs = line.putArray("topic_partitions");
      owned.stream()
          .sorted((a, b) -> a.toString().compareTo(b.toString()))
          .forEach(p -> pairs.addArray().add(p.topic()).add(p.partition()));
    }
    try {
      event(line);
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  /**
   * Keeps the member's assignment across eager and incremental (cooperative, KIP-848)
   * rebalances; `withTopics` (a pattern subscription) also names each partition's topic.
   */
  private static final class Assignment implements ConsumerRebalanceListener {
    private final Set<TopicPartition> owned = new HashSet<>();
    private final boolean withTopics;

    Assignment(boolean withTopics) {
      this.withTopics = withTopics;
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> added) {
      owned.addAll(added);
      assigned(owned, withTopics);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
      owned.removeAll(revoked);
      assigned(owned, withTopics);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> lost) {
      onPartitionsRevoked(lost);
    }
  }

  /**
   * The group settings of a group_member job: the classic protocol (default: session timeout,
   * heartbeat interval and client-side assignor from the job) or KIP-848's `consumer` protocol,
   * whose session timeout, heartbeat interval and assignor are the broker's (Kafka refuses the
   * classic settings with it); `remote_assignor` picks a server-side assignor by name.
   */
  private static void addGroupProtocol(Properties props, JsonNode job) {
    if (job.path("group_protocol").asText("classic").equals("consumer")) {
      props.put("group.protocol", "consumer");
      if (job.hasNonNull("remote_assignor")) {
        props.put("group.remote.assignor", job.get("remote_assignor").asText());
      }
      return;
    }
    int sessionMs = job.path("session_timeout_ms").asInt(10_000);
    props.put("session.timeout.ms", String.valueOf(sessionMs));
    props.put("heartbeat.interval.ms", String.valueOf(Math.max(sessionMs / 5, 10)));
    props.put("partition.assignment.strategy", ASSIGNORS.get(job.path("assignor").asText("range")));
  }

  /**
   * Subscribes to `pattern` if the job has one, else to `topic`. With the consumer protocol a
   * pattern is Kafka 4's SubscriptionPattern (RE2/J, evaluated by the broker); with the classic
   * protocol a java.util.regex Pattern the client matches against its metadata.
   */
  private static void subscribe(
      KafkaConsumer<byte[], byte[]> consumer, JsonNode job, ConsumerRebalanceListener listener)
      throws Exception {
    if (!job.hasNonNull("pattern")) {
      consumer.subscribe(List.of(job.get("topic").asText()), listener);
      return;
    }
    String regex = job.get("pattern").asText();
    if (!job.path("group_protocol").asText("classic").equals("consumer")) {
      consumer.subscribe(java.util.regex.Pattern.compile(regex), listener);
      return;
    }
    // Kafka 4.0+, called by name so that the program still compiles against 3.9.
    Class<?> patternClass = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
    Object pattern = patternClass.getConstructor(String.class).newInstance(regex);
    KafkaConsumer.class
        .getMethod("subscribe", patternClass, ConsumerRebalanceListener.class)
        .invoke(consumer, pattern, listener);
  }

  /**
   * SIGTERM runs the shutdown hooks: this one sets the flag (the job's loops stop), then waits
   * until the clients have closed (leaving their groups) and the result is printed.
   */
  private static AtomicBoolean stopOnSigterm() {
    AtomicBoolean stopping = new AtomicBoolean();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stopping.set(true);
                  try {
                    RESULT_PRINTED.await(30, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }));
    return stopping;
  }

  private static ObjectNode groupMember(JsonNode job) throws Exception {
    requireOwnJvm("group_member (stopped by SIGTERM)");
    Properties props = properties(job);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    props.put("group.id", job.get("group").asText());
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", "earliest");
    addGroupProtocol(props, job);
    props.put("metadata.max.age.ms", "500");
    if (job.hasNonNull("instance_id")) {
      props.put("group.instance.id", job.get("instance_id").asText());
    }
    addConfig(props, job);
    AtomicBoolean stopping = stopOnSigterm();
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(props)) {
      boolean withTopics = job.hasNonNull("pattern");
      subscribe(consumer, job, new Assignment(withTopics));
      while (!stopping.get()) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
        Map<TopicPartition, Long> unreported = new HashMap<>();
        records.partitions().forEach(p -> unreported.put(p, records.records(p).get(0).offset()));
        try {
          for (ConsumerRecord<byte[], byte[]> record : records) {
            TopicPartition partition = new TopicPartition(record.topic(), record.partition());
            consumer.commitSync(Map.of(partition, new OffsetAndMetadata(record.offset() + 1)));
            ObjectNode line = JSON.createObjectNode().put("event", "record");
            if (withTopics) {
              line.put("topic", record.topic());
            }
            line.put("partition", record.partition()).put("offset", record.offset());
            event(line.put("value", b64(record.value())));
            unreported.put(partition, record.offset() + 1);
          }
        } catch (RebalanceInProgressException
            | CommitFailedException
            | StaleMemberEpochException
            | FencedMemberEpochException
            | UnknownMemberIdException e) {
          // A rebalance refused the commit: the rest of the batch is not reported, and is
          // read again (here if the partition stays assigned, else by its new owner).
          Set<TopicPartition> assigned = consumer.assignment();
          unreported.forEach(
              (partition, offset) -> {
                if (assigned.contains(partition)) {
                  consumer.seek(partition, offset);
                }
              });
        }
      }
    }
    return JSON.createObjectNode().put("ok", true);
  }

  // --- admin ---

  private static Admin admin(JsonNode job) {
    Properties props = properties(job);
    props.put("default.api.timeout.ms", String.valueOf(timeoutMs(job)));
    props.put("request.timeout.ms", String.valueOf(Math.min(timeoutMs(job), 30_000)));
    addConfig(props, job);
    return Admin.create(withClientId(props, "admin"));
  }

  private static ObjectNode itemsResult(String field, ArrayNode items) {
    ObjectNode result = JSON.createObjectNode().put("ok", true);
    result.set(field, items);
    return result;
  }

  private static ObjectNode metadata(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      ObjectNode result = JSON.createObjectNode().put("ok", true);
      result.put("cluster_id", admin.describeCluster().clusterId().get());
      Node controller = admin.describeCluster().controller().get();
      result.put("controller", controller == null ? -1 : controller.id());
      ArrayNode brokers = result.putArray("brokers");
      for (Node node : admin.describeCluster().nodes().get()) {
        brokers.addObject().put("id", node.id()).put("host", node.host()).put("port", node.port());
      }
      List<String> names = new ArrayList<>();
      if (job.hasNonNull("topics")) {
        job.get("topics").forEach(t -> names.add(t.asText()));
      } else {
        names.addAll(admin.listTopics().names().get());
      }
      ArrayNode topics = result.putArray("topics");
      Map<String, KafkaFuture<TopicDescription>> described =
          admin.describeTopics(names).topicNameValues();
      for (String name : names) {
        ObjectNode topic = topics.addObject().put("name", name);
        TopicDescription description = outcome(topic, described.get(name));
        ArrayNode partitions = topic.putArray("partitions");
        if (description != null) {
          for (TopicPartitionInfo info : description.partitions()) {
            int leader = info.leader() == null ? -1 : info.leader().id();
            partitions.addObject().put("partition", info.partition()).put("leader", leader);
          }
        }
      }
      return result;
    }
  }

  private static ObjectNode createTopics(JsonNode job) throws Exception {
    List<NewTopic> topics = new ArrayList<>();
    for (JsonNode spec : job.get("topics")) {
      Integer partitions = optionalInt(spec.get("partitions"));
      Integer replication = optionalInt(spec.get("replication_factor"));
      NewTopic topic =
          new NewTopic(
              spec.get("name").asText(),
              java.util.Optional.ofNullable(partitions),
              java.util.Optional.ofNullable(replication == null ? null : replication.shortValue()));
      Map<String, String> configs = new HashMap<>();
      spec.path("configs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));
      topics.add(topic.configs(configs));
    }
    try (Admin admin = admin(job)) {
      Map<String, KafkaFuture<Void>> futures = admin.createTopics(topics).values();
      ArrayNode items = JSON.createArrayNode();
      for (NewTopic topic : topics) {
        outcome(items.addObject().put("name", topic.name()), futures.get(topic.name()));
      }
      return itemsResult("topics", items);
    }
  }

  private static ObjectNode deleteTopics(JsonNode job) throws Exception {
    List<String> names = new ArrayList<>();
    job.get("topics").forEach(t -> names.add(t.asText()));
    try (Admin admin = admin(job)) {
      Map<String, KafkaFuture<Void>> futures = admin.deleteTopics(names).topicNameValues();
      ArrayNode items = JSON.createArrayNode();
      for (String name : names) {
        outcome(items.addObject().put("name", name), futures.get(name));
      }
      return itemsResult("topics", items);
    }
  }

  private static ObjectNode createPartitions(JsonNode job) throws Exception {
    Map<String, NewPartitions> counts = new HashMap<>();
    for (JsonNode spec : job.get("topics")) {
      counts.put(spec.get("name").asText(), NewPartitions.increaseTo(spec.get("count").asInt()));
    }
    try (Admin admin = admin(job)) {
      Map<String, KafkaFuture<Void>> futures = admin.createPartitions(counts).values();
      ArrayNode items = JSON.createArrayNode();
      for (JsonNode spec : job.get("topics")) {
        String name = spec.get("name").asText();
        outcome(items.addObject().put("name", name), futures.get(name));
      }
      return itemsResult("topics", items);
    }
  }

  private static ConfigResource resource(JsonNode spec) {
    ConfigResource.Type type =
        switch (spec.get("type").asText()) {
          case "broker" -> ConfigResource.Type.BROKER;
          case "client_metrics" -> ConfigResource.Type.CLIENT_METRICS;
          // Kafka 4.0+ (KIP-848 group configs), by name: 3.9 has no GROUP and fails here.
          case "group" -> ConfigResource.Type.valueOf("GROUP");
          default -> ConfigResource.Type.TOPIC;
        };
    return new ConfigResource(type, spec.get("name").asText());
  }

  private static ObjectNode resourceItem(ArrayNode items, JsonNode spec) {
    return items.addObject().put("type", spec.get("type").asText()).put("name", spec.get("name").asText());
  }

  private static ObjectNode describeConfigs(JsonNode job) throws Exception {
    List<ConfigResource> resources = new ArrayList<>();
    job.get("resources").forEach(spec -> resources.add(resource(spec)));
    try (Admin admin = admin(job)) {
      Map<ConfigResource, KafkaFuture<Config>> futures = admin.describeConfigs(resources).values();
      ArrayNode items = JSON.createArrayNode();
      for (JsonNode spec : job.get("resources")) {
        ObjectNode item = resourceItem(items, spec);
        Config config = outcome(item, futures.get(resource(spec)));
        ObjectNode entries = item.putObject("configs");
        if (config != null) {
          for (ConfigEntry entry : config.entries()) {
            entries
                .putObject(entry.name())
                .put("value", entry.value())
                .put("source", entry.source().name())
                .put("read_only", entry.isReadOnly())
                .put("sensitive", entry.isSensitive());
          }
        }
      }
      return itemsResult("resources", items);
    }
  }

  private static ObjectNode alterConfigs(JsonNode job) throws Exception {
    Map<ConfigResource, Collection<AlterConfigOp>> changes = new HashMap<>();
    for (JsonNode spec : job.get("resources")) {
      List<AlterConfigOp> ops = new ArrayList<>();
      spec.path("set")
          .fields()
          .forEachRemaining(
              e ->
                  ops.add(
                      new AlterConfigOp(
                          new ConfigEntry(e.getKey(), e.getValue().asText()),
                          AlterConfigOp.OpType.SET)));
      spec.path("delete")
          .forEach(
              name ->
                  ops.add(
                      new AlterConfigOp(
                          new ConfigEntry(name.asText(), null), AlterConfigOp.OpType.DELETE)));
      changes.put(resource(spec), ops);
    }
    try (Admin admin = admin(job)) {
      Map<ConfigResource, KafkaFuture<Void>> futures = admin.incrementalAlterConfigs(changes).values();
      ArrayNode items = JSON.createArrayNode();
      for (JsonNode spec : job.get("resources")) {
        outcome(resourceItem(items, spec), futures.get(resource(spec)));
      }
      return itemsResult("resources", items);
    }
  }

  private static OffsetSpec offsetSpec(JsonNode spec) {
    if (spec.isNumber()) {
      return OffsetSpec.forTimestamp(spec.asLong());
    }
    switch (spec.asText()) {
      case "earliest":
        return OffsetSpec.earliest();
      case "latest":
        return OffsetSpec.latest();
      case "max_timestamp":
        return OffsetSpec.maxTimestamp();
      default:
        throw new IllegalArgumentException("unknown offset spec " + spec);
    }
  }

  private static List<TopicPartition> jobPartitions(Admin admin, JsonNode job) throws Exception {
    String topic = job.get("topic").asText();
    List<TopicPartition> partitions = new ArrayList<>();
    if (job.hasNonNull("partitions")) {
      job.get("partitions").forEach(p -> partitions.add(new TopicPartition(topic, p.asInt())));
    } else {
      TopicDescription description =
          admin.describeTopics(List.of(topic)).topicNameValues().get(topic).get();
      description.partitions().forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
    }
    return partitions;
  }

  private static ObjectNode listOffsets(JsonNode job) throws Exception {
    IsolationLevel isolation =
        job.path("isolation").asText("read_uncommitted").equals("read_committed")
            ? IsolationLevel.READ_COMMITTED
            : IsolationLevel.READ_UNCOMMITTED;
    try (Admin admin = admin(job)) {
      Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
      List<TopicPartition> partitions = jobPartitions(admin, job);
      partitions.forEach(p -> specs.put(p, offsetSpec(job.get("spec"))));
      Map<TopicPartition, KafkaFuture<ListOffsetsResultInfo>> futures = new HashMap<>();
      var listed = admin.listOffsets(specs, new ListOffsetsOptions(isolation));
      partitions.forEach(p -> futures.put(p, listed.partitionResult(p)));
      ArrayNode items = JSON.createArrayNode();
      for (TopicPartition partition : partitions) {
        ObjectNode item = items.addObject().put("partition", partition.partition());
        ListOffsetsResultInfo info = outcome(item, futures.get(partition));
        item.put("offset", info == null ? -1 : info.offset());
        item.put("timestamp", info == null ? -1 : info.timestamp());
      }
      return itemsResult("offsets", items);
    }
  }

  private static ObjectNode deleteRecords(JsonNode job) throws Exception {
    String topic = job.get("topic").asText();
    Map<TopicPartition, RecordsToDelete> deletions = new HashMap<>();
    job.get("offsets")
        .fields()
        .forEachRemaining(
            e ->
                deletions.put(
                    new TopicPartition(topic, Integer.parseInt(e.getKey())),
                    RecordsToDelete.beforeOffset(e.getValue().asLong())));
    try (Admin admin = admin(job)) {
      var futures = admin.deleteRecords(deletions).lowWatermarks();
      ArrayNode items = JSON.createArrayNode();
      for (TopicPartition partition : deletions.keySet()) {
        ObjectNode item = items.addObject().put("partition", partition.partition());
        var deleted = outcome(item, futures.get(partition));
        item.put("low_watermark", deleted == null ? -1 : deleted.lowWatermark());
      }
      return itemsResult("partitions", items);
    }
  }

  // --- leader elections and reassignments ---

  /** `partitions`: [{"topic", "partition"}], or null for all of them. */
  private static Set<TopicPartition> topicPartitions(JsonNode job) {
    if (!job.hasNonNull("partitions")) {
      return null;
    }
    Set<TopicPartition> partitions = new HashSet<>();
    for (JsonNode p : job.get("partitions")) {
      partitions.add(new TopicPartition(p.get("topic").asText(), p.get("partition").asInt()));
    }
    return partitions;
  }

  /** {"election": "preferred"|"unclean", "partitions": [...] | null}: each partition's outcome. */
  private static ObjectNode electLeaders(JsonNode job) throws Exception {
    var type =
        org.apache.kafka.common.ElectionType.valueOf(job.get("election").asText().toUpperCase());
    try (Admin admin = admin(job)) {
      Map<TopicPartition, java.util.Optional<Throwable>> outcomes =
          admin.electLeaders(type, topicPartitions(job)).partitions().get();
      ArrayNode items = JSON.createArrayNode();
      outcomes.forEach(
          (partition, error) -> putError(partitionItem(items, partition), error.orElse(null)));
      return itemsResult("partitions", items);
    }
  }

  /** {"reassignments": [{"topic", "partition", "replicas": [...] | null (cancel)}]}. */
  private static ObjectNode alterReassignments(JsonNode job) throws Exception {
    Map<TopicPartition, java.util.Optional<NewPartitionReassignment>> wanted = new HashMap<>();
    for (JsonNode entry : job.get("reassignments")) {
      TopicPartition partition =
          new TopicPartition(entry.get("topic").asText(), entry.get("partition").asInt());
      List<Integer> replicas = new ArrayList<>();
      entry.path("replicas").forEach(node -> replicas.add(node.asInt()));
      wanted.put(
          partition,
          entry.hasNonNull("replicas")
              ? java.util.Optional.of(new NewPartitionReassignment(replicas))
              : java.util.Optional.empty());
    }
    try (Admin admin = admin(job)) {
      Map<TopicPartition, KafkaFuture<Void>> futures =
          admin.alterPartitionReassignments(wanted).values();
      ArrayNode items = JSON.createArrayNode();
      for (TopicPartition partition : wanted.keySet()) {
        outcome(partitionItem(items, partition), futures.get(partition));
      }
      return itemsResult("partitions", items);
    }
  }

  /** {"partitions": [...] | null}: the ongoing reassignments. */
  private static ObjectNode listReassignments(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      Set<TopicPartition> partitions = topicPartitions(job);
      var listed =
          partitions == null
              ? admin.listPartitionReassignments()
              : admin.listPartitionReassignments(partitions);
      ArrayNode items = JSON.createArrayNode();
      listed
          .reassignments()
          .get()
          .forEach(
              (partition, reassignment) -> {
                ObjectNode item = partitionItem(items, partition);
                reassignment.replicas().forEach(item.putArray("replicas")::add);
                reassignment.addingReplicas().forEach(item.putArray("adding")::add);
                reassignment.removingReplicas().forEach(item.putArray("removing")::add);
              });
      return itemsResult("reassignments", items);
    }
  }

  // --- group admin ---

  private static ObjectNode listGroups(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      ArrayNode items = JSON.createArrayNode();
      for (ConsumerGroupListing listing : admin.listConsumerGroups().all().get()) {
        ObjectNode item = items.addObject().put("group", listing.groupId());
        item.put("state", listing.state().map(Object::toString).orElse(null));
        item.put("type", listing.type().map(Client::groupTypeName).orElse(null));
      }
      return itemsResult("groups", items);
    }
  }

  /** Kafka's wire name of a group type (ListGroups' GroupType): `classic`, `consumer`, ... */
  private static String groupTypeName(GroupType type) {
    return type.toString().toLowerCase(java.util.Locale.ROOT);
  }

  private static ObjectNode describeGroups(JsonNode job) throws Exception {
    List<String> names = new ArrayList<>();
    job.get("groups").forEach(g -> names.add(g.asText()));
    try (Admin admin = admin(job)) {
      Map<String, KafkaFuture<ConsumerGroupDescription>> futures =
          admin.describeConsumerGroups(names).describedGroups();
      ArrayNode items = JSON.createArrayNode();
      for (String name : names) {
        ObjectNode item = items.addObject().put("group", name);
        ConsumerGroupDescription description = outcome(item, futures.get(name));
        ArrayNode members = item.putArray("members");
        if (description == null) {
          continue;
        }
        item.put("state", description.state().toString());
        item.put("protocol", description.partitionAssignor());
        item.put("type", groupTypeName(description.type()));
        putOptionalInt(item, "group_epoch", description, "groupEpoch");
        putOptionalInt(item, "target_assignment_epoch", description, "targetAssignmentEpoch");
        for (MemberDescription member : description.members()) {
          ObjectNode out = members.addObject().put("member_id", member.consumerId());
          out.put("client_id", member.clientId());
          out.put("instance_id", member.groupInstanceId().orElse(null));
          putOptionalInt(out, "member_epoch", member, "memberEpoch");
          ArrayNode partitions = out.putArray("partitions");
          member
              .assignment()
              .topicPartitions()
              .forEach(p -> partitions.addArray().add(p.topic()).add(p.partition()));
        }
      }
      return itemsResult("groups", items);
    }
  }

  /**
   * `field` = the Optional<Integer> that `getter` returns (null when empty): the epochs Kafka
   * 4.0+ describes, called by name so that the program still compiles against 3.9 (absent there).
   */
  private static void putOptionalInt(ObjectNode item, String field, Object described, String getter)
      throws Exception {
    java.lang.reflect.Method method;
    try {
      method = described.getClass().getMethod(getter);
    } catch (NoSuchMethodException e) {
      item.putNull(field);
      return;
    }
    Object value = ((java.util.Optional<?>) method.invoke(described)).orElse(null);
    if (value == null) {
      item.putNull(field);
    } else {
      item.put(field, (Integer) value);
    }
  }

  private static ObjectNode deleteGroups(JsonNode job) throws Exception {
    List<String> names = new ArrayList<>();
    job.get("groups").forEach(g -> names.add(g.asText()));
    try (Admin admin = admin(job)) {
      Map<String, KafkaFuture<Void>> futures = admin.deleteConsumerGroups(names).deletedGroups();
      ArrayNode items = JSON.createArrayNode();
      for (String name : names) {
        outcome(items.addObject().put("group", name), futures.get(name));
      }
      return itemsResult("groups", items);
    }
  }

  private static ObjectNode listGroupOffsets(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin
              .listConsumerGroupOffsets(job.get("group").asText())
              .partitionsToOffsetAndMetadata()
              .get();
      ArrayNode items = JSON.createArrayNode();
      offsets.forEach(
          (partition, committed) -> {
            ObjectNode item = items.addObject().put("topic", partition.topic());
            item.put("partition", partition.partition());
            item.put("offset", committed.offset()).put("metadata", committed.metadata());
          });
      return itemsResult("offsets", items);
    }
  }

  private static TopicPartition jobTopicPartition(JsonNode spec) {
    return new TopicPartition(spec.get("topic").asText(), spec.get("partition").asInt());
  }

  private static ObjectNode partitionItem(ArrayNode items, TopicPartition partition) {
    return items.addObject().put("topic", partition.topic()).put("partition", partition.partition());
  }

  private static ObjectNode alterGroupOffsets(JsonNode job) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (JsonNode spec : job.get("offsets")) {
      offsets.put(
          jobTopicPartition(spec),
          new OffsetAndMetadata(spec.get("offset").asLong(), spec.path("metadata").asText("")));
    }
    try (Admin admin = admin(job)) {
      var altered = admin.alterConsumerGroupOffsets(job.get("group").asText(), offsets);
      ArrayNode items = JSON.createArrayNode();
      for (JsonNode spec : job.get("offsets")) {
        TopicPartition partition = jobTopicPartition(spec);
        outcome(partitionItem(items, partition), altered.partitionResult(partition));
      }
      return itemsResult("offsets", items);
    }
  }

  private static ObjectNode deleteGroupOffsets(JsonNode job) throws Exception {
    Set<TopicPartition> partitions = new HashSet<>();
    job.get("partitions").forEach(spec -> partitions.add(jobTopicPartition(spec)));
    try (Admin admin = admin(job)) {
      var deleted = admin.deleteConsumerGroupOffsets(job.get("group").asText(), partitions);
      ArrayNode items = JSON.createArrayNode();
      for (JsonNode spec : job.get("partitions")) {
        TopicPartition partition = jobTopicPartition(spec);
        outcome(partitionItem(items, partition), deleted.partitionResult(partition));
      }
      return itemsResult("partitions", items);
    }
  }

  // --- ACLs: bindings and filters by Kafka's enum names (README.md) ---

  private static String optionalText(JsonNode node) {
    return node == null || node.isNull() ? null : node.asText();
  }

  private static AclBinding aclBinding(JsonNode spec) {
    return new AclBinding(
        new ResourcePattern(
            ResourceType.valueOf(spec.get("resource_type").asText()),
            spec.get("resource_name").asText(),
            PatternType.valueOf(spec.path("pattern_type").asText("LITERAL"))),
        new AccessControlEntry(
            spec.get("principal").asText(),
            spec.path("host").asText("*"),
            AclOperation.valueOf(spec.get("operation").asText()),
            AclPermissionType.valueOf(spec.path("permission_type").asText("ALLOW"))));
  }

  /** A filter: an absent or null field matches anything (ANY, or a null name). */
  private static AclBindingFilter aclFilter(JsonNode spec) {
    return new AclBindingFilter(
        new ResourcePatternFilter(
            ResourceType.valueOf(spec.path("resource_type").asText("ANY")),
            optionalText(spec.get("resource_name")),
            PatternType.valueOf(spec.path("pattern_type").asText("ANY"))),
        new AccessControlEntryFilter(
            optionalText(spec.get("principal")),
            optionalText(spec.get("host")),
            AclOperation.valueOf(spec.path("operation").asText("ANY")),
            AclPermissionType.valueOf(spec.path("permission_type").asText("ANY"))));
  }

  private static ObjectNode bindingOut(ObjectNode out, AclBinding binding) {
    out.put("resource_type", binding.pattern().resourceType().name());
    out.put("resource_name", binding.pattern().name());
    out.put("pattern_type", binding.pattern().patternType().name());
    out.put("principal", binding.entry().principal());
    out.put("host", binding.entry().host());
    out.put("operation", binding.entry().operation().name());
    return out.put("permission_type", binding.entry().permissionType().name());
  }

  private static ObjectNode createAcls(JsonNode job) throws Exception {
    List<AclBinding> bindings = new ArrayList<>();
    job.get("acls").forEach(spec -> bindings.add(aclBinding(spec)));
    try (Admin admin = admin(job)) {
      Map<AclBinding, KafkaFuture<Void>> futures = admin.createAcls(bindings).values();
      ArrayNode items = JSON.createArrayNode();
      for (AclBinding binding : bindings) {
        outcome(bindingOut(items.addObject(), binding), futures.get(binding));
      }
      return itemsResult("acls", items);
    }
  }

  private static ObjectNode describeAcls(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      ObjectNode result = JSON.createObjectNode().put("ok", true);
      Collection<AclBinding> found =
          outcome(result, admin.describeAcls(aclFilter(job.path("filter"))).values());
      ArrayNode acls = result.putArray("acls");
      if (found != null) {
        found.forEach(binding -> bindingOut(acls.addObject(), binding));
      }
      return result;
    }
  }

  private static ObjectNode deleteAcls(JsonNode job) throws Exception {
    List<AclBindingFilter> filters = new ArrayList<>();
    job.get("filters").forEach(spec -> filters.add(aclFilter(spec)));
    try (Admin admin = admin(job)) {
      Map<AclBindingFilter, KafkaFuture<DeleteAclsResult.FilterResults>> futures =
          admin.deleteAcls(filters).values();
      ArrayNode items = JSON.createArrayNode();
      for (AclBindingFilter filter : filters) {
        ObjectNode item = items.addObject();
        DeleteAclsResult.FilterResults matched = outcome(item, futures.get(filter));
        ArrayNode acls = item.putArray("acls");
        if (matched != null) {
          for (DeleteAclsResult.FilterResult deleted : matched.values()) {
            putError(bindingOut(acls.addObject(), deleted.binding()), deleted.exception());
          }
        }
      }
      return itemsResult("filters", items);
    }
  }

  // --- Kafka 4.3 admin (DescribeTopicPartitions, DescribeQuorum, ListTransactions v2) ---

  private static ObjectNode describeTopics(JsonNode job) throws Exception {
    org.apache.kafka.clients.admin.DescribeTopicsOptions options =
        new org.apache.kafka.clients.admin.DescribeTopicsOptions();
    if (job.hasNonNull("partition_limit")) {
      options.partitionSizeLimitPerResponse(job.get("partition_limit").asInt());
    }
    try (Admin admin = admin(job)) {
      List<String> names = new ArrayList<>();
      if (job.hasNonNull("topics")) {
        job.get("topics").forEach(t -> names.add(t.asText()));
      } else {
        names.addAll(
            admin
                .listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true))
                .names()
                .get());
      }
      Map<String, KafkaFuture<TopicDescription>> described =
          admin.describeTopics(names, options).topicNameValues();
      ArrayNode items = JSON.createArrayNode();
      for (String name : new TreeSet<>(names)) {
        ObjectNode topic = items.addObject().put("name", name);
        TopicDescription description = outcome(topic, described.get(name));
        ArrayNode partitions = topic.putArray("partitions");
        if (description == null) {
          continue;
        }
        topic.put("topic_id", description.topicId().toString());
        topic.put("internal", description.isInternal());
        for (TopicPartitionInfo info : description.partitions()) {
          ObjectNode partition = partitions.addObject().put("partition", info.partition());
          partition.put("leader", info.leader() == null ? -1 : info.leader().id());
          ArrayNode replicas = partition.putArray("replicas");
          info.replicas().forEach(node -> replicas.add(node.id()));
          ArrayNode isr = partition.putArray("isr");
          info.isr().forEach(node -> isr.add(node.id()));
        }
      }
      return itemsResult("topics", items);
    }
  }

  private static ArrayNode replicaStates(List<org.apache.kafka.clients.admin.QuorumInfo.ReplicaState> states) {
    ArrayNode items = JSON.createArrayNode();
    for (org.apache.kafka.clients.admin.QuorumInfo.ReplicaState state : states) {
      ObjectNode item = items.addObject().put("replica_id", state.replicaId());
      item.put("log_end_offset", state.logEndOffset());
      item.put("last_fetch_timestamp", state.lastFetchTimestamp().orElse(-1));
      item.put("last_caught_up_timestamp", state.lastCaughtUpTimestamp().orElse(-1));
    }
    return items;
  }

  private static ObjectNode describeQuorum(JsonNode job) throws Exception {
    try (Admin admin = admin(job)) {
      org.apache.kafka.clients.admin.QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
      ObjectNode result = JSON.createObjectNode().put("ok", true);
      result.put("leader_id", quorum.leaderId()).put("leader_epoch", quorum.leaderEpoch());
      result.put("high_watermark", quorum.highWatermark());
      result.set("voters", replicaStates(quorum.voters()));
      result.set("observers", replicaStates(quorum.observers()));
      ArrayNode nodes = result.putArray("nodes");
      quorum
          .nodes()
          .forEach(
              (id, node) -> {
                ArrayNode endpoints = nodes.addObject().put("id", id).putArray("endpoints");
                node.endpoints()
                    .forEach(
                        e -> endpoints.addObject().put("name", e.name()).put("host", e.host()).put("port", e.port()));
              });
      return result;
    }
  }

  private static ObjectNode listTransactions(JsonNode job) throws Exception {
    org.apache.kafka.clients.admin.ListTransactionsOptions options =
        new org.apache.kafka.clients.admin.ListTransactionsOptions();
    if (job.hasNonNull("pattern")) {
      // Kafka 4.1+ (KIP-1152); called by name so that the program still compiles against 3.9.
      options
          .getClass()
          .getMethod("filterOnTransactionalIdPattern", String.class)
          .invoke(options, job.get("pattern").asText());
    }
    try (Admin admin = admin(job)) {
      ArrayNode items = JSON.createArrayNode();
      for (org.apache.kafka.clients.admin.TransactionListing listing :
          admin.listTransactions(options).all().get()) {
        ObjectNode item = items.addObject().put("transactional_id", listing.transactionalId());
        item.put("producer_id", listing.producerId()).put("state", listing.state().toString());
      }
      return itemsResult("transactions", items);
    }
  }

  // A consumer with `group`, assigned (not subscribed) `offsets`' partitions, commits them
  // (commitSync) and reads them back (committed): `config` may choose the group protocol.
  private static ObjectNode commitOffsets(JsonNode job) throws Exception {
    Properties props = properties(job);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    props.put("group.id", job.get("group").asText());
    props.put("enable.auto.commit", "false");
    addConfig(props, job);
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (JsonNode spec : job.get("offsets")) {
      offsets.put(
          jobTopicPartition(spec),
          new OffsetAndMetadata(spec.get("offset").asLong(), spec.path("metadata").asText("")));
    }
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(props)) {
      consumer.assign(offsets.keySet());
      Duration timeout = Duration.ofMillis(timeoutMs(job));
      consumer.commitSync(offsets, timeout);
      Map<TopicPartition, OffsetAndMetadata> committed =
          consumer.committed(offsets.keySet(), timeout);
      ArrayNode items = JSON.createArrayNode();
      committed.forEach(
          (partition, value) -> {
            ObjectNode item = partitionItem(items, partition);
            item.put("offset", value == null ? -1 : value.offset());
            item.put("metadata", value == null ? null : value.metadata());
          });
      return itemsResult("offsets", items);
    }
  }

  // Kafka 4.1+ (KIP-1142), called by name so that the program still compiles against 3.9.
  @SuppressWarnings("unchecked")
  private static ObjectNode listConfigResources(JsonNode job) throws Exception {
    Set<ConfigResource.Type> types = new HashSet<>();
    job.path("types").forEach(t -> types.add(ConfigResource.Type.valueOf(t.asText().toUpperCase())));
    Class<?> optionsClass = Class.forName("org.apache.kafka.clients.admin.ListConfigResourcesOptions");
    try (Admin admin = admin(job)) {
      Object listed =
          Admin.class
              .getMethod("listConfigResources", Set.class, optionsClass)
              .invoke(admin, types, optionsClass.getConstructor().newInstance());
      Collection<ConfigResource> resources =
          ((KafkaFuture<Collection<ConfigResource>>) listed.getClass().getMethod("all").invoke(listed))
              .get();
      ArrayNode items = JSON.createArrayNode();
      for (ConfigResource resource : resources) {
        items.addObject().put("type", resource.type().name().toLowerCase()).put("name", resource.name());
      }
      return itemsResult("resources", items);
    }
  }
}
