"""KIP-848 consumer groups: the model, the server-side assignors, reconciliation, and the
coordinator logic behind ConsumerGroupHeartbeat and ConsumerGroupDescribe."""
