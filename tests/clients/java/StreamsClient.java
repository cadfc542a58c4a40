import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.protocol.Errors;

/**
 * The admin calls of KIP-1071 streams groups (kafka-clients 4.1+): list, describe and delete
 * streams groups, answered as JSON for the Python tests. Loaded by Client.java by name, so
 * Client.java still compiles against kafka-clients 3.x.
 */
public final class StreamsClient {
  private StreamsClient() {}

  public static ObjectNode streamsAdmin(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    ObjectNode result = json.createObjectNode().put("ok", true);
    switch (job.get("op").asText()) {
      case "list_streams_groups":
        result.set("groups", listStreamsGroups(admin, json));
        return result;
      case "describe_streams_groups":
        result.set("groups", describeStreamsGroups(job, admin, json));
        return result;
      default:
        result.set("groups", deleteStreamsGroups(job, admin, json));
        return result;
    }
  }

  private static List<String> names(JsonNode job) {
    List<String> names = new ArrayList<>();
    job.get("groups").forEach(g -> names.add(g.asText()));
    return names;
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

  private static ArrayNode listStreamsGroups(Admin admin, ObjectMapper json) throws Exception {
    ArrayNode items = json.createArrayNode();
    for (GroupListing listing :
        admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get()) {
      ObjectNode item = items.addObject().put("group", listing.groupId());
      item.put("state", listing.groupState().map(Object::toString).orElse(null));
      item.put("type", listing.type().map(t -> t.toString().toLowerCase()).orElse(null));
    }
    return items;
  }

  private static ArrayNode deleteStreamsGroups(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    List<String> names = names(job);
    Map<String, KafkaFuture<Void>> futures = admin.deleteStreamsGroups(names).deletedGroups();
    ArrayNode items = json.createArrayNode();
    for (String name : names) {
      outcome(items.addObject().put("group", name), futures.get(name));
    }
    return items;
  }

  private static ArrayNode describeStreamsGroups(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    List<String> names = names(job);
    Map<String, KafkaFuture<StreamsGroupDescription>> futures =
        admin.describeStreamsGroups(names).describedGroups();
    ArrayNode items = json.createArrayNode();
    for (String name : names) {
      ObjectNode item = items.addObject().put("group", name);
      StreamsGroupDescription description = outcome(item, futures.get(name));
      if (description == null) {
        continue;
      }
      item.put("state", description.groupState().toString());
      item.put("group_epoch", description.groupEpoch());
      item.put("target_assignment_epoch", description.targetAssignmentEpoch());
      item.put("topology_epoch", description.topologyEpoch());
      ArrayNode subtopologies = item.putArray("subtopologies");
      for (StreamsGroupSubtopologyDescription sub : description.subtopologies()) {
        ObjectNode out = subtopologies.addObject().put("id", sub.subtopologyId());
        sub.sourceTopics().forEach(out.putArray("source_topics")::add);
        sub.repartitionSinkTopics().forEach(out.putArray("repartition_sink_topics")::add);
        ObjectNode changelogs = out.putObject("changelogs");
        sub.stateChangelogTopics().forEach((topic, info) -> changelogs.put(topic, info.partitions()));
        ObjectNode repartition = out.putObject("repartition_sources");
        sub.repartitionSourceTopics().forEach((topic, info) -> repartition.put(topic, info.partitions()));
      }
      ArrayNode members = item.putArray("members");
      for (StreamsGroupMemberDescription member : description.members()) {
        ObjectNode out = members.addObject().put("member_id", member.memberId());
        out.put("member_epoch", member.memberEpoch()).put("process_id", member.processId());
        out.put("client_id", member.clientId()).put("topology_epoch", member.topologyEpoch());
        out.put("is_classic", member.isClassic());
        out.put("endpoint", member.userEndpoint().map(e -> e.host() + ":" + e.port()).orElse(null));
        ObjectNode tags = out.putObject("client_tags");
        member.clientTags().forEach(tags::put);
        tasks(out.putObject("assignment"), member.assignment());
        tasks(out.putObject("target_assignment"), member.targetAssignment());
      }
    }
    return items;
  }

  private static void tasks(ObjectNode out, StreamsGroupMemberAssignment assignment) {
    taskIds(out.putObject("active"), assignment.activeTasks());
    taskIds(out.putObject("standby"), assignment.standbyTasks());
    taskIds(out.putObject("warmup"), assignment.warmupTasks());
  }

  private static void taskIds(ObjectNode out, List<StreamsGroupMemberAssignment.TaskIds> tasks) {
    for (StreamsGroupMemberAssignment.TaskIds ids : tasks) {
      ArrayNode partitions =
          out.has(ids.subtopologyId())
              ? (ArrayNode) out.get(ids.subtopologyId())
              : out.putArray(ids.subtopologyId());
      ids.partitions().forEach(partitions::add);
    }
  }
}
