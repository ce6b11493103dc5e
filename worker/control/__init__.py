"""The contract lifecycle over Kafka, operator side: publish, promote, retire, consumers,
attribution."""
