"""Workloads: the protocol, built-ins (bbc-news, synthetic-mlp), user entry points."""
