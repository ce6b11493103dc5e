"""Clause kinds: what each kind measures over a batch's features and how it renders a result."""
