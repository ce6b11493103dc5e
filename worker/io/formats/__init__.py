"""Input formats: one reader module per file format and what they share."""
