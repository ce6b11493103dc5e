"""Contract versions over time: registry, publish/promote/retire policy, migration, evidence, SLO,
overlap."""
