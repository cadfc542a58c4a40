"""Client telemetry (KIP-714): subscriptions, client instances and the pushed metrics."""
