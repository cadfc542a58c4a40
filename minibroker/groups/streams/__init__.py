"""KIP-1071 streams groups: model, task assignor, topology configuration, records."""
