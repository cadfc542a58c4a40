"""TLS contexts, SASL mechanisms (PLAIN, SCRAM) and the credentials they check."""
