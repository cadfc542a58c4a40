"""minibroker's benchmarks (`scripts/bench`): each scenario against minibroker and, in the same
run, against librdkafka's in-process mock cluster, with ratios minibroker ÷ mock."""
