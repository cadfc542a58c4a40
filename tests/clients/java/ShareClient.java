import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The share-group jobs of the Java harness (KIP-932, kafka-clients 4.x only: compiled beside
 * Client.java for 4.x, reached from it by name). `share_consume`: a KafkaShareConsumer reads
 * until it has accepted `count` records, `timeout_ms` passes, or (`idle_ms`) no record came
 * for that long. In explicit mode each record is
 * acknowledged with the type `acks` names for its value (default ACCEPT) and committed after
 * each poll; `hold` stops after the first non-empty poll without acknowledging (a consumer
 * that is then killed while holding records); implicit mode accepts what each poll returned.
 */
public final class ShareClient {
  private ShareClient() {}

  public static ObjectNode shareConsume(JsonNode job, ObjectMapper json, Runnable polled)
      throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", job.get("bootstrap").asText());
    props.put("group.id", job.get("group").asText());
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    boolean explicit = job.path("mode").asText("explicit").equals("explicit");
    props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
    job.path("config").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
    int count = job.path("count").asInt(Integer.MAX_VALUE);
    boolean hold = job.path("hold").asBoolean(false);
    long deadline = System.currentTimeMillis() + job.path("timeout_ms").asLong(30_000);
    long idleMs = job.path("idle_ms").asLong(0);
    long lastRecord = System.currentTimeMillis();
    ArrayNode records = json.createArrayNode();
    ArrayNode commitErrors = json.createArrayNode();
    int settled = 0;
    try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
      consumer.subscribe(List.of(job.get("topic").asText()));
      while (settled < count && System.currentTimeMillis() < deadline) {
        if (idleMs > 0 && System.currentTimeMillis() - lastRecord > idleMs) {
          break;
        }
        boolean any = false;
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          any = true;
          lastRecord = System.currentTimeMillis();
          String value = record.value() == null ? null : new String(record.value());
          AcknowledgeType type = explicit ? ackType(job, value) : AcknowledgeType.ACCEPT;
          if (explicit && !hold) {
            consumer.acknowledge(record, type);
          }
          if (type == AcknowledgeType.ACCEPT) {
            settled++;
          }
          records.add(recordOut(json, record, type));
        }
        if (any && hold) {
          polled.run();
          Thread.sleep(Long.MAX_VALUE); // killed by the test while holding its records
        }
        if (any && explicit) {
          noteCommit(consumer.commitSync(), commitErrors);
        }
      }
      if (!explicit) {
        noteCommit(consumer.commitSync(), commitErrors);
      }
    }
    ObjectNode result = json.createObjectNode().put("ok", true);
    result.set("records", records);
    result.set("commit_errors", commitErrors);
    return result.put("timed_out", settled < count);
  }

  private static AcknowledgeType ackType(JsonNode job, String value) {
    JsonNode chosen = job.path("acks").path(value == null ? "" : value);
    return chosen.isMissingNode() ? AcknowledgeType.ACCEPT : AcknowledgeType.valueOf(chosen.asText());
  }

  private static void noteCommit(
      Map<TopicIdPartition, Optional<KafkaException>> results, ArrayNode errors) {
    results.forEach(
        (partition, error) -> error.ifPresent(e -> errors.add(partition + ": " + e.getMessage())));
  }

  private static ObjectNode recordOut(
      ObjectMapper json, ConsumerRecord<byte[], byte[]> record, AcknowledgeType type) {
    ObjectNode out = json.createObjectNode();
    out.put("partition", record.partition()).put("offset", record.offset());
    out.put("value", record.value() == null ? null : Base64.getEncoder().encodeToString(record.value()));
    out.put("delivery_count", record.deliveryCount().map(Short::intValue).orElse(-1));
    return out.put("ack", type.name());
  }
}
