import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.utils.SecurityUtils;

/**
 * The delegation-token jobs of the Java harness (KIP-48), reached from Client.java by name:
 * `create_delegation_token` (optional `owner`, `renewers` as `User:name`, `max_lifetime_ms`),
 * `renew_delegation_token` and `expire_delegation_token` (`hmac` in base64, `period_ms`,
 * default -1), `describe_delegation_token` (optional `owners`). A token comes back as
 * `token_id`, `hmac` (base64), `owner`, `requester`, `renewers` and the `issue`, `expiry`
 * and `max` timestamps; a refused request fails the job with Kafka's error name.
 */
public final class TokenClient {
  private TokenClient() {}

  public static ObjectNode tokenAdmin(JsonNode job, Admin admin, ObjectMapper json)
      throws Exception {
    ObjectNode result = json.createObjectNode().put("ok", true);
    switch (job.get("op").asText()) {
      case "create_delegation_token":
        tokenOut(result.putObject("token"), create(job, admin));
        return result;
      case "renew_delegation_token":
        RenewDelegationTokenOptions renew =
            new RenewDelegationTokenOptions().renewTimePeriodMs(job.path("period_ms").asLong(-1));
        return result.put(
            "expiry", admin.renewDelegationToken(hmac(job), renew).expiryTimestamp().get());
      case "expire_delegation_token":
        ExpireDelegationTokenOptions expire =
            new ExpireDelegationTokenOptions().expiryTimePeriodMs(job.path("period_ms").asLong(-1));
        return result.put(
            "expiry", admin.expireDelegationToken(hmac(job), expire).expiryTimestamp().get());
      case "describe_delegation_token":
        DescribeDelegationTokenOptions describe = new DescribeDelegationTokenOptions();
        if (job.hasNonNull("owners")) {
          describe.owners(principals(job.get("owners")));
        }
        ArrayNode tokens = result.putArray("tokens");
        for (DelegationToken token : admin.describeDelegationToken(describe).delegationTokens().get()) {
          tokenOut(tokens.addObject(), token);
        }
        return result;
      default:
        throw new IllegalArgumentException("not a delegation-token op: " + job.get("op"));
    }
  }

  private static DelegationToken create(JsonNode job, Admin admin) throws Exception {
    CreateDelegationTokenOptions options =
        new CreateDelegationTokenOptions()
            .renewers(principals(job.path("renewers")))
            .maxlifeTimeMs(job.path("max_lifetime_ms").asLong(-1));
    if (job.hasNonNull("owner")) {
      options.owner(SecurityUtils.parseKafkaPrincipal(job.get("owner").asText()));
    }
    return admin.createDelegationToken(options).delegationToken().get();
  }

  private static byte[] hmac(JsonNode job) {
    return Base64.getDecoder().decode(job.get("hmac").asText());
  }

  private static List<KafkaPrincipal> principals(JsonNode names) {
    List<KafkaPrincipal> principals = new ArrayList<>();
    names.forEach(name -> principals.add(SecurityUtils.parseKafkaPrincipal(name.asText())));
    return principals;
  }

  private static void tokenOut(ObjectNode out, DelegationToken token) {
    TokenInformation info = token.tokenInfo();
    out.put("token_id", info.tokenId());
    out.put("hmac", token.hmacAsBase64String());
    out.put("owner", info.owner().toString());
    out.put("requester", info.tokenRequester().toString());
    ArrayNode renewers = out.putArray("renewers");
    info.renewers().forEach(renewer -> renewers.add(renewer.toString()));
    out.put("issue", info.issueTimestamp());
    out.put("expiry", info.expiryTimestamp());
    out.put("max", info.maxTimestamp());
  }
}
