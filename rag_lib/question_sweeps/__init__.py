"""A stage swept over every question of the benchmark (the gates, generation, the injection set), shared by experiments.

:mod:`.gates` calibrates and measures the evidence gates; :mod:`.generation` answers every
question behind a gate and tabulates bad-input and backend-fault outcomes. Experiments import
these instead of each other (``tests/test_layers.py``).
"""
