"""Contract documents: parsing, safety and schema checks, coherence, classification, review."""
