import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

/**
 * Cluster administration jobs of Kafka 4.x's Admin (compiled only against kafka-clients 4.x,
 * reached by name from Client.java): hanging transactions (describeProducers, abortTransaction,
 * and kafka-transactions.sh's abort by start offset), unregisterBroker, the KRaft voters
 * (addRaftVoter, removeRaftVoter, describeMetadataQuorum with directory ids) and
 * describeTopics with eligible leader replicas (KIP-966).
 */
public final class ClusterAdmin {
  private ClusterAdmin() {}

  public static ObjectNode run(JsonNode job, Admin admin, ObjectMapper json) throws Exception {
    ObjectNode result = json.createObjectNode().put("ok", true);
    switch (job.get("op").asText()) {
      case "describe_producers":
        result.set("producers", producers(json, describeProducers(admin, partition(job))));
        return result;
      case "abort_transaction":
        admin.abortTransaction(abortSpec(job)).all().get();
        return result;
      case "abort_hanging":
        AbortTransactionSpec spec = hangingSpec(admin, partition(job), job.get("start_offset").asLong());
        result.put("producer_id", spec.producerId()).put("producer_epoch", spec.producerEpoch());
        result.put("coordinator_epoch", spec.coordinatorEpoch());
        admin.abortTransaction(spec).all().get();
        return result;
      case "unregister_broker":
        admin.unregisterBroker(job.get("broker_id").asInt()).all().get();
        return result;
      case "describe_cluster_nodes":
        result.set("nodes", clusterNodes(json, admin));
        return result;
      case "add_raft_voter":
        admin
            .addRaftVoter(
                job.get("voter_id").asInt(),
                Uuid.fromString(job.get("directory_id").asText()),
                endpoints(job.get("endpoints")))
            .all()
            .get();
        return result;
      case "remove_raft_voter":
        admin
            .removeRaftVoter(job.get("voter_id").asInt(), Uuid.fromString(job.get("directory_id").asText()))
            .all()
            .get();
        return result;
      case "describe_quorum_voters":
        return quorum(json, admin.describeMetadataQuorum().quorumInfo().get(), result);
      case "describe_topics_elr":
        result.set("topics", topicsWithElr(json, admin, job));
        return result;
      default:
        throw new IllegalArgumentException("unknown cluster admin op " + job.get("op").asText());
    }
  }

  private static TopicPartition partition(JsonNode job) {
    return new TopicPartition(job.get("topic").asText(), job.get("partition").asInt());
  }

  private static List<ProducerState> describeProducers(Admin admin, TopicPartition partition)
      throws Exception {
    PartitionProducerState state =
        admin.describeProducers(List.of(partition)).partitionResult(partition).get();
    return state.activeProducers();
  }

  private static ArrayNode producers(ObjectMapper json, List<ProducerState> states) {
    ArrayNode items = json.createArrayNode();
    for (ProducerState state : states) {
      ObjectNode item = items.addObject().put("producer_id", state.producerId());
      item.put("producer_epoch", state.producerEpoch());
      item.put("coordinator_epoch", state.coordinatorEpoch().orElse(-1));
      item.put("current_transaction_start_offset", state.currentTransactionStartOffset().orElse(-1));
    }
    return items;
  }

  private static AbortTransactionSpec abortSpec(JsonNode job) {
    return new AbortTransactionSpec(
        partition(job),
        job.get("producer_id").asLong(),
        (short) job.get("producer_epoch").asInt(),
        job.get("coordinator_epoch").asInt());
  }

  /** kafka-transactions.sh abort --start-offset: the producer whose open transaction starts there. */
  private static AbortTransactionSpec hangingSpec(Admin admin, TopicPartition partition, long startOffset)
      throws Exception {
    for (ProducerState state : describeProducers(admin, partition)) {
      if (state.currentTransactionStartOffset().orElse(-1) == startOffset) {
        return new AbortTransactionSpec(
            partition,
            state.producerId(),
            (short) state.producerEpoch(),
            state.coordinatorEpoch().orElse(0));
      }
    }
    throw new IllegalArgumentException(
        "no open transaction starting at offset " + startOffset + " on partition " + partition);
  }

  /** describeCluster with fenced brokers included (KIP-1073): each broker's id and fencing. */
  private static ArrayNode clusterNodes(ObjectMapper json, Admin admin) throws Exception {
    org.apache.kafka.clients.admin.DescribeClusterOptions options =
        new org.apache.kafka.clients.admin.DescribeClusterOptions().includeFencedBrokers(true);
    ArrayNode items = json.createArrayNode();
    List<Node> nodes = new ArrayList<>(admin.describeCluster(options).nodes().get());
    nodes.sort(java.util.Comparator.comparingInt(Node::id));
    for (Node node : nodes) {
      items.addObject().put("id", node.id()).put("fenced", node.isFenced());
    }
    return items;
  }

  private static Set<RaftVoterEndpoint> endpoints(JsonNode specs) {
    Set<RaftVoterEndpoint> endpoints = new java.util.HashSet<>();
    for (JsonNode spec : specs) {
      endpoints.add(
          new RaftVoterEndpoint(spec.get("name").asText(), spec.get("host").asText(), spec.get("port").asInt()));
    }
    return endpoints;
  }

  private static ArrayNode replicas(ObjectMapper json, List<QuorumInfo.ReplicaState> states) {
    ArrayNode items = json.createArrayNode();
    for (QuorumInfo.ReplicaState state : states) {
      ObjectNode item = items.addObject().put("replica_id", state.replicaId());
      item.put("directory_id", state.replicaDirectoryId().toString());
      item.put("log_end_offset", state.logEndOffset());
    }
    return items;
  }

  private static ObjectNode quorum(ObjectMapper json, QuorumInfo quorum, ObjectNode result) {
    result.put("leader_id", quorum.leaderId()).put("leader_epoch", quorum.leaderEpoch());
    result.set("voters", replicas(json, quorum.voters()));
    result.set("observers", replicas(json, quorum.observers()));
    ArrayNode nodes = result.putArray("nodes");
    for (Map.Entry<Integer, QuorumInfo.Node> entry : new java.util.TreeMap<>(quorum.nodes()).entrySet()) {
      ArrayNode endpoints = nodes.addObject().put("id", entry.getKey()).putArray("endpoints");
      for (RaftVoterEndpoint endpoint : entry.getValue().endpoints()) {
        endpoints.addObject().put("name", endpoint.name()).put("host", endpoint.host()).put("port", endpoint.port());
      }
    }
    return result;
  }

  private static ArrayNode ids(ObjectMapper json, List<Node> nodes) {
    ArrayNode items = json.createArrayNode();
    nodes.forEach(node -> items.add(node.id()));
    return items;
  }

  private static ArrayNode topicsWithElr(ObjectMapper json, Admin admin, JsonNode job) throws Exception {
    List<String> names = new ArrayList<>();
    job.get("topics").forEach(name -> names.add(name.asText()));
    Map<String, TopicDescription> described = admin.describeTopics(names).allTopicNames().get();
    ArrayNode items = json.createArrayNode();
    for (String name : new TreeSet<>(names)) {
      ArrayNode partitions = items.addObject().put("name", name).putArray("partitions");
      for (TopicPartitionInfo info : described.get(name).partitions()) {
        ObjectNode partition = partitions.addObject().put("partition", info.partition());
        partition.put("leader", info.leader() == null ? -1 : info.leader().id());
        partition.set("replicas", ids(json, info.replicas()));
        partition.set("isr", ids(json, info.isr()));
        partition.set("elr", ids(json, info.elr()));
        partition.set("last_known_elr", ids(json, info.lastKnownElr()));
      }
    }
    return items;
  }
}
