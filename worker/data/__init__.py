"""Demo data shipped with the package (see README, section Data and attribution)."""
