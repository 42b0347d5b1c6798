"""Labelling: pooling every configuration's Top-10, auditing and proposing gold, and blind re-reads."""
