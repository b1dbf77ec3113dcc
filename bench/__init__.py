"""lossgate benchmarks. ``make bench`` (``python -m bench``) runs them all.

Every benchmark reports medians and a ratio against a baseline measured in the
same run on the same machine, because absolute times on shared machines are noise.
"""
