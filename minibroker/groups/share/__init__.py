"""Share groups (KIP-932): membership and assignment, share-partition state and sessions."""
