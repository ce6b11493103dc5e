"""Renderings of decisions and evidence: text, JSON, the HTML batch page, offenders."""
