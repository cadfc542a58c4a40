import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The share-group jobs of the Java harness (KIP-932, kafka-clients 4.x only: compiled beside
 * Client.java for 4.x, reached from it by name). `share_consume`: a KafkaShareConsumer reads
 * until it has accepted `count` records, `timeout_ms` passes, or (`idle_ms`) no record came
 * for that long. In explicit mode each record is
 * acknowledged with the type `acks` names for its value (default ACCEPT) and committed after
 * each poll; `polls` stops after that many polls that returned records; `hold` stops after
 * the first non-empty poll without acknowledging (a consumer
 * that is then killed while holding records); implicit mode accepts what each poll returned.
 * The share-group admin jobs (`shareAdmin`): `list_share_groups`, `describe_share_groups`,
 * `list_share_group_offsets`, `alter_share_group_offsets`, `delete_share_group_offsets`
 * (tests/clients/README.md).
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
    int polls = job.path("polls").asInt(0);
    int pollsWithRecords = 0;
    long lastRecord = System.currentTimeMillis();
    ArrayNode records = json.createArrayNode();
    ArrayNode commitErrors = json.createArrayNode();
    int settled = 0;
    try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(Client.withClientId(props, "consumer"))) {
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
        if (any && ++pollsWithRecords == polls) {
          break;
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

  public static ObjectNode shareAdmin(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    ObjectNode result = json.createObjectNode().put("ok", true);
    switch (job.get("op").asText()) {
      case "list_share_groups":
        result.set("groups", listShareGroups(admin, json));
        return result;
      case "describe_share_groups":
        result.set("groups", describeShareGroups(job, admin, json));
        return result;
      case "list_share_group_offsets":
        return listShareGroupOffsets(job, admin, result);
      case "alter_share_group_offsets":
        result.set("partitions", alterShareGroupOffsets(job, admin, json));
        return result;
      default:
        result.set("topics", deleteShareGroupOffsets(job, admin, json));
        return result;
    }
  }

  /** The future's value, with `error`/`error_name` set on `item` (null when it succeeded). */
  private static <T> T outcome(ObjectNode item, KafkaFuture<T> future) throws InterruptedException {
    try {
      T value = future.get();
      item.putNull("error").putNull("error_name");
      return value;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      item.put("error", cause.getClass().getName() + ": " + cause.getMessage());
      item.put("error_name", Errors.forException(cause).name());
      return null;
    }
  }

  private static ArrayNode listShareGroups(Admin admin, ObjectMapper json) throws Exception {
    ArrayNode items = json.createArrayNode();
    for (GroupListing listing : admin.listGroups(ListGroupsOptions.forShareGroups()).all().get()) {
      ObjectNode item = items.addObject().put("group", listing.groupId());
      item.put("state", listing.groupState().map(Object::toString).orElse(null));
      item.put("type", listing.type().map(t -> t.toString().toLowerCase()).orElse(null));
    }
    return items;
  }

  private static ArrayNode describeShareGroups(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    List<String> names = new ArrayList<>();
    job.get("groups").forEach(g -> names.add(g.asText()));
    Map<String, KafkaFuture<ShareGroupDescription>> futures =
        admin.describeShareGroups(names).describedGroups();
    ArrayNode items = json.createArrayNode();
    for (String name : names) {
      ObjectNode item = items.addObject().put("group", name);
      ShareGroupDescription description = outcome(item, futures.get(name));
      ArrayNode members = item.putArray("members");
      if (description == null) {
        continue;
      }
      item.put("state", description.groupState().toString());
      item.put("group_epoch", description.groupEpoch());
      item.put("target_assignment_epoch", description.targetAssignmentEpoch());
      for (ShareMemberDescription member : description.members()) {
        ObjectNode out = members.addObject().put("member_id", member.consumerId());
        out.put("client_id", member.clientId()).put("member_epoch", member.memberEpoch());
        ArrayNode partitions = out.putArray("partitions");
        for (TopicPartition tp : member.assignment().topicPartitions()) {
          partitions.addArray().add(tp.topic()).add(tp.partition());
        }
      }
    }
    return items;
  }

  private static ObjectNode listShareGroupOffsets(JsonNode job, Admin admin, ObjectNode result)
      throws Exception {
    String group = job.get("group").asText();
    ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
    if (job.hasNonNull("partitions")) {
      List<TopicPartition> wanted = new ArrayList<>();
      job.get("partitions").forEach(p -> wanted.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt())));
      spec.topicPartitions(wanted);
    }
    Map<TopicPartition, SharePartitionOffsetInfo> found =
        outcome(result, admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group));
    ArrayNode offsets = result.putArray("offsets");
    if (found == null) {
      return result;
    }
    found.forEach(
        (tp, info) -> {
          ObjectNode out = offsets.addObject().put("topic", tp.topic()).put("partition", tp.partition());
          if (info == null) {
            out.putNull("start_offset");
            return;
          }
          out.put("start_offset", info.startOffset());
          out.put("leader_epoch", info.leaderEpoch().orElse(null));
          out.put("lag", info.lag().orElse(null));
        });
    return result;
  }

  private static ArrayNode alterShareGroupOffsets(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    job.get("offsets").forEach(o -> offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()), o.get(2).asLong()));
    AlterShareGroupOffsetsResult altered = admin.alterShareGroupOffsets(job.get("group").asText(), offsets);
    ArrayNode items = json.createArrayNode();
    for (TopicPartition tp : offsets.keySet()) {
      ObjectNode item = items.addObject().put("topic", tp.topic()).put("partition", tp.partition());
      outcome(item, altered.partitionResult(tp));
    }
    return items;
  }

  private static ArrayNode deleteShareGroupOffsets(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    Set<String> topics = new LinkedHashSet<>();
    job.get("topics").forEach(t -> topics.add(t.asText()));
    DeleteShareGroupOffsetsResult deleted = admin.deleteShareGroupOffsets(job.get("group").asText(), topics);
    ArrayNode items = json.createArrayNode();
    for (String topic : topics) {
      outcome(items.addObject().put("topic", topic), deleted.topicResult(topic));
    }
    return items;
  }
}
