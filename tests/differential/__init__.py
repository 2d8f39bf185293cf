"""Differential tests: the store's contexts against pi 1.6's own code, run live under Node.js."""
