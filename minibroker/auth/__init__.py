"""Authorization (ACL bindings, Kafka's StandardAuthorizer decisions, connection principals)
and client quotas."""
